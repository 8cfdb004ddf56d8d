import "./platform/zod-jitless";
import { render } from "preact";
import { App } from "./app";
import { resumeSession, signInMessage } from "./session";
import "./style.css";

render(<App />, document.getElementById("app")!);
// A return from the identity provider, or the tab's provider session after a reload.
void resumeSession().then((message) => signInMessage.set(message));
