import fs from "node:fs";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { gzipSync } from "node:zlib";
import sharp from "sharp";
import request from "supertest";
import { formatWorkers } from "../src/assets/format-workers";
import {
  MAX_SVG_ATTRIBUTES,
  MAX_SVG_ATTRIBUTES_PER_ELEMENT,
  MAX_SVG_BYTES,
  MAX_SVG_ELEMENTS,
  MAX_SVG_TAG_CHARS,
} from "../src/assets/svg-original";
import { originalKey } from "../src/assets/blobs";
import { createTestApp, expectProblem, upload, type TestApp } from "./helpers";
import { startRecordingListener } from "../../../test/support/net";

/**
 * SVG originals: accepted, stored sanitised (what `{media}/original/<id>.svg` serves and what
 * librsvg renders), sized from their width/height/viewBox; hostile ones are sanitised or refused,
 * and nothing outside is fetched.
 */
const CORPUS = path.resolve(__dirname, "../../../../shared/fixtures/corpus/sharp");
const LOGO = fs.readFileSync(path.join(CORPUS, "check.svg"));
const WS = "ws-svg";

const svg = (body: string, attributes = 'width="40" height="20"') =>
  Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" ${attributes}>${body}</svg>`,
  );

describe("SVG originals at upload", () => {
  let t: TestApp;
  let listener: Awaited<ReturnType<typeof startRecordingListener>>;

  beforeAll(async () => {
    t = await createTestApp();
    // Any request to this listener would be a reference followed from an uploaded SVG.
    listener = await startRecordingListener();
  });
  afterAll(async () => {
    await listener.close();
    await t.close();
  });

  async function stored(id: string): Promise<string> {
    const blob = await t.blobStore.get(originalKey(id));
    if (!blob) throw new Error("no stored original");
    expect(blob.contentType).toBe("image/svg+xml");
    return (await buffer(blob.body)).toString("utf8");
  }

  it("accepts a real logo: format svg, its viewBox size, stored as sanitised SVG", async () => {
    const res = await upload(t.as(WS), LOGO, "check.svg");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      format: "svg",
      mimeType: "image/svg+xml",
      width: 100,
      height: 100,
      hasAlpha: true,
      animated: false,
      originalFilename: "check.svg",
    });
    expect(res.body.mediaUrl).toBe(`http://media.test/thumbnail:size=256/${res.body.id}.svg`);
    // The green tick's colour wins over the transparent background.
    expect(res.body.dominantColor).toMatch(/^#[0-5][0-9a-f][6-9a-f][0-9a-f][0-5][0-9a-f]$/);
    const text = await stored(res.body.id);
    expect(text).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" viewBox="0 0 100 100">/);
    expect(text).toContain('fill="green"');
    expect(res.body.bytes).toBe(Buffer.byteLength(text));
    // What is stored is what librsvg draws: the same 100 x 100 picture.
    const meta = await sharp(Buffer.from(text)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["svg", 100, 100]);
  });

  it("sizes by width/height when given, else by the viewBox, in user units at 72 dpi", async () => {
    const sized = await upload(t.as(WS), svg('<rect width="40" height="20"/>', 'width="300" height="120"'), "a.svg");
    expect([sized.status, sized.body.width, sized.body.height]).toEqual([201, 300, 120]);
    const viewBox = await upload(t.as(WS), svg('<rect width="7" height="3"/>', 'viewBox="0 0 70 30"'), "b.svg");
    expect([viewBox.status, viewBox.body.width, viewBox.body.height]).toEqual([201, 70, 30]);
  });

  it("removes scripts and event handlers", async () => {
    const res = await upload(
      t.as(WS),
      svg(
        '<script>alert(document.cookie)</script><rect width="40" height="20" fill="red" onclick="steal()"/>' +
          '<set attributeName="onload" to="alert(2)"/><a href="javascript:alert(3)"><text y="10">x</text></a>',
        'width="40" height="20" onload="alert(1)"',
      ),
      "script.svg",
    );
    expect(res.status).toBe(201);
    const text = await stored(res.body.id);
    for (const hostile of ["<script", "alert", "onload", "onclick", "steal", "javascript:"]) {
      expect([hostile, text.includes(hostile)]).toEqual([hostile, false]);
    }
    expect(text).toContain('fill="red"');
  });

  it("removes foreignObject", async () => {
    const res = await upload(
      t.as(WS),
      svg(
        '<foreignObject width="40" height="20"><iframe xmlns="http://www.w3.org/1999/xhtml" src="https://example.com/"/></foreignObject><circle r="5"/>',
      ),
      "fo.svg",
    );
    expect(res.status).toBe(201);
    const text = await stored(res.body.id);
    expect(text).not.toMatch(/foreignObject|iframe|example\.com/i);
    expect(text).toContain("<circle");
  });

  it("removes every reference that leaves the document, and fetches none of them", async () => {
    const url = `http://127.0.0.1:${listener.port}`;
    const res = await upload(
      t.as(WS),
      svg(
        `<image href="${url}/image.png" width="10" height="10"/>` +
          `<image xlink:href="${url}/xlink.png" width="10" height="10"/>` +
          `<image href="data:image/svg+xml;base64,PHN2Zy8+" width="10" height="10"/>` +
          `<use xlink:href="file:///etc/passwd#x"/>` +
          `<rect width="5" height="5" fill="url(${url}/paint.svg#p)" style="fill: url('${url}/style.svg#s')"/>` +
          `<style>@import url(${url}/sheet.css); circle { fill: blue }</style>` +
          `<style>rect { fill: url(file:///etc/passwd) }</style>` +
          '<linearGradient id="g"><stop offset="0" stop-color="red"/></linearGradient>' +
          '<rect id="r" width="10" height="10" fill="url(#g)"/><use href="#r" x="20"/>' +
          '<image href="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==" width="1" height="1"/>',
      ),
      "references.svg",
    );
    expect(res.status).toBe(201);
    const text = await stored(res.body.id);
    for (const hostile of ["127.0.0.1", "file:", "passwd", "@import", "svg+xml"]) {
      expect([hostile, text.includes(hostile)]).toEqual([hostile, false]);
    }
    // What stays inside the document stays: a gradient by fragment, a `use` of it, an embedded PNG.
    expect(text).toContain('fill="url(#g)"');
    expect(text).toMatch(/<use [^>]*href="#r"/);
    expect(text).toContain('href="data:image/png;base64,');
    expect(listener.seen).toEqual([]);
  });

  it("refuses an XXE entity and billion laughs with a 415 before any parser expands them; nothing stored", async () => {
    const before = await t.db.prisma.asset.count();
    const xxe = Buffer.from(
      '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>' +
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text y="10">&xxe;</text></svg>',
    );
    const laughs = Buffer.from(
      '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY lol "lol">' +
        Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? "" : i};`.repeat(10)}">`).join(
          "",
        ) +
        ']><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text y="10">&lol9;</text></svg>',
    );
    for (const [name, body] of [
      ["xxe.svg", xxe],
      ["laughs.svg", laughs],
    ] as const) {
      const res = await upload(t.as(WS), body, name);
      expectProblem(res, 415);
      expect(res.body.detail).toMatch(/ENTITY/);
    }
    expect(await t.db.prisma.asset.count()).toBe(before);
  });

  it("accepts a DOCTYPE without entities, and does not store it", async () => {
    const res = await upload(
      t.as(WS),
      Buffer.from(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://127.0.0.1:1/svg11.dtd">\n' +
          '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
      ),
      "doctype.svg",
    );
    expect(res.status).toBe(201);
    const text = await stored(res.body.id);
    expect(text).not.toMatch(/DOCTYPE|<\?xml|127\.0\.0\.1/);
  });

  it("refuses an SVG above LIMIT_INPUT_PIXELS with the same 422 as any image", async () => {
    const res = await upload(t.as(WS), svg("<rect/>", 'width="20000" height="20000"'), "huge.svg");
    expectProblem(res, 422);
    expect(res.body.type).toMatch(/image-too-large$/);
    expect(res.body.detail).toContain("20000x20000");
  });

  it("refuses an SVG above MAX_SVG_ELEMENTS or MAX_SVG_BYTES with a 422 before parsing it", async () => {
    // With the root <svg>, one element more than the cap.
    const many = await upload(t.as(WS), svg("<g/>".repeat(MAX_SVG_ELEMENTS)), "many.svg");
    expectProblem(many, 422);
    expect(many.body.detail).toContain(`at most ${MAX_SVG_ELEMENTS} elements`);
    const large = svg(`<path d="M0 0${" L1 1".repeat(MAX_SVG_BYTES / 5)}"/>`);
    const res = await upload(t.as(WS), large, "large.svg");
    expectProblem(res, 422);
    expect(res.body.detail).toContain(`at most ${MAX_SVG_BYTES} bytes`);
  });

  it("refuses an element with 60,000 attributes (a 649 KB file) with a 422 naming the limit, before jsdom parses it", async () => {
    const attributes = Array.from({ length: 60_000 }, (_, i) => `a${i}="1"`).join(" ");
    const res = await upload(t.as(WS), svg(`<rect ${attributes}/>`), "attributes.svg");
    expectProblem(res, 422);
    expect(res.body.detail).toBe(
      `An SVG element may have at most ${MAX_SVG_ATTRIBUTES_PER_ELEMENT} attributes (<rect> has more)`,
    );
  });

  it("refuses more attributes in all than MAX_SVG_ATTRIBUTES, and a start tag above MAX_SVG_TAG_CHARS", async () => {
    const attributes = Array.from({ length: MAX_SVG_ATTRIBUTES_PER_ELEMENT }, (_, i) => `a${i}=""`).join(" ");
    const count = Math.ceil(MAX_SVG_ATTRIBUTES / MAX_SVG_ATTRIBUTES_PER_ELEMENT) + 1;
    const many = await upload(t.as(WS), svg(`<g ${attributes}/>`.repeat(count)), "many-attributes.svg");
    expectProblem(many, 422);
    expect(many.body.detail).toBe(`An SVG may have at most ${MAX_SVG_ATTRIBUTES} attributes in all`);
    const long = await upload(t.as(WS), svg(`<path d="M0 0${" L1 1".repeat(MAX_SVG_TAG_CHARS / 5)}"/>`), "long.svg");
    expectProblem(long, 422);
    expect(long.body.detail).toContain(`at most ${MAX_SVG_TAG_CHARS} characters long with its attributes (<path>`);
  });

  it("sanitises in a worker thread: /healthz answers while a slow SVG is being sanitised", async () => {
    // Within every limit, yet seconds of jsdom and DOMPurify work (unknown attributes removed one by one).
    const attributes = Array.from({ length: MAX_SVG_ATTRIBUTES_PER_ELEMENT - 2 }, (_, i) => `a${i}="1"`).join(" ");
    const slow = svg(`<rect ${attributes} width="1" height="1"/>`.repeat(600));
    let answered = false;
    const uploading = upload(t.as(WS), slow, "slow.svg").then((res) => {
      answered = true;
      return res;
    });
    while (formatWorkers().running === 0) {
      expect(answered).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const health = await request(t.app).get("/healthz");
    expect(health.status).toBe(200);
    // Answered while the upload's SVG is still in its thread.
    expect([formatWorkers().running, answered]).toEqual([1, false]);
    const res = await uploading;
    expect(res.status).toBe(201);
    expect(await stored(res.body.id)).not.toContain("a0=");
  });

  it("refuses markup that is not SVG (415), malformed XML (422) and compressed SVG (415)", async () => {
    const html = await upload(t.as(WS), Buffer.from("<html><body>hi</body></html>"), "page.svg");
    expectProblem(html, 415);
    const malformed = await upload(t.as(WS), Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><a></svg>'), "x.svg");
    expectProblem(malformed, 422);
    expect(malformed.body.detail).toMatch(/well-formed/);
    const svgz = await upload(t.as(WS), gzipSync(LOGO), "logo.svgz");
    expectProblem(svgz, 415);
  });

  it("replaces an original with an SVG (PUT /original), sanitised the same way", async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#00f" } })
      .png()
      .toBuffer();
    const first = await upload(t.as(WS), png, "blue.png");
    expect(first.status).toBe(201);
    const res = await t
      .as(WS)
      .put(`/v1/assets/${first.body.id}/original`)
      .attach("file", svg('<rect width="40" height="20" onmouseover="x()"/>'), "logo.svg");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ format: "svg", mimeType: "image/svg+xml", width: 40, height: 20, version: 2 });
    const text = await stored(first.body.id);
    expect(text).not.toContain("onmouseover");
    expect(res.body.bytes).toBe(Buffer.byteLength(text));
  });
});
