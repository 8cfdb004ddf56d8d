import { config } from "zod";

// zod probes for eval (new Function) before compiling fast parsers; under the page's
// script-src 'self' that probe is a policy violation. The interpreted parsers are enough here.
config({ jitless: true });
