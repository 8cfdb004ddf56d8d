import { classify, emptyProfile, OTHER, phaseTotals } from "../perf-phases";

// Three samples as `perf script` prints them after `perf inject --jit` (innermost frame first).
const SCRIPT = `node 15839  1238.193772:     200040 cpu-clock:pppH: 
\tffffffff813a4413 finish_task_switch.isra.0+0x93 ([kernel.kallsyms])
\tffffffff81732438 do_epoll_wait+0x548 ([kernel.kallsyms])
\t          108cae epoll_pwait+0x6e (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t         14c05fb uv__io_poll+0x4db (/usr/bin/node)

node 15839  1238.244721:     200040 cpu-clock:pppH: 
\t          d0778d v8::internal::Heap::CopyRange<v8::internal::FullObjectSlot>+0x3d (/usr/bin/node)
\t    7f0c6ecf39d5 JS:*statSync node:fs:1679:18+0x495 (/work/main/jitted-15839-11781.so)
\t    7f0c6ed25617 JS:*get /work/main/packages/storage/src/filesystem.ts:2:5921+0x4d7 (/work/main/jitted-15839-12.so)
\t    7f0c6ed10872 JS:*readInputs /work/main/services/media/src/delivery/rendition-service.ts:2:7378+0x1132 (/work/main/jitted-15839-9.so)

node 15839  1238.315816:     100020 cpu-clock:pppH: 
\t    7f0c6ed081c1 JS:^toBuffer /work/main/node_modules/.pnpm/sharp@0.35.5/node_modules/sharp/dist/output.cjs:152:19+0x81 (/work/main/jitted-15839-3.so)
\t    7f0c6ed10872 JS:*renderUnmapped /work/main/services/media/src/pipeline/render.ts:2:3266+0x1132 (/work/main/jitted-15839-4.so)

node 15839  1238.365816:     200040 cpu-clock:pppH: 
\t    7f0c6ed081c1 JS:*writeHead node:_http_server:341:19+0x741 (/work/main/jitted-15839-5.so)
\t    7f0c6ed10872 JS:*parserOnIncoming node:_http_server:1026:26+0x12 (/work/main/jitted-15839-6.so)

node 15839  1238.415816:     200040 cpu-clock:pppH: 
\t          d14de0 v8::internal::Heap::AllocateExternalBackingStore+0x0 (/usr/bin/node)
\t          afd133 v8::ArrayBuffer::NewBackingStore+0x43 (/usr/bin/node)
`;

describe("classify", () => {
  it("puts each sample's CPU time in the phase of its innermost recognised frame", () => {
    const profile = emptyProfile();
    classify(SCRIPT, profile);
    expect(Object.fromEntries(phaseTotals(profile))).toEqual({
      "event loop (poll, wake-ups)": 200040,
      // statSync is the innermost recognised frame, not the blob store or the rendition service above it.
      "file I/O (node:fs)": 200040,
      "sharp JS: builders, toBuffer": 100020,
      // ServerResponse.writeHead is in _http_server.js, but it is the response's.
      "HTTP response write": 200040,
      [OTHER]: 200040,
    });
  });

  it("names the deciding frame by function and file, without addresses", () => {
    const profile = emptyProfile();
    classify(SCRIPT, profile);
    expect(Object.fromEntries(profile.frames.get("file I/O (node:fs)")!)).toEqual({ "statSync node:fs": 200040 });
    expect(Object.fromEntries(profile.frames.get("sharp JS: builders, toBuffer")!)).toEqual({
      "toBuffer output.cjs": 100020,
    });
    expect(Object.fromEntries(profile.frames.get("event loop (poll, wake-ups)")!)).toEqual({
      do_epoll_wait: 200040,
    });
  });

  it("adds up across scripts and ignores blocks without a sample header", () => {
    const profile = emptyProfile();
    classify(SCRIPT, profile);
    classify(`${SCRIPT}\n\nnot a sample\n`, profile);
    expect([...phaseTotals(profile).values()].reduce((a, b) => a + b, 0)).toBe(2 * (4 * 200040 + 100020));
  });
});
