import sharp from "sharp";
import { ssimulacra2, SSIMULACRA2_WEIGHT_COUNT } from "../src/perceptual/ssimulacra2";
const raw = async (s: sharp.Sharp) => { const { data, info } = await s.removeAlpha().raw().toBuffer({ resolveWithObject: true }); return { data, width: info.width, height: info.height, channels: 3 as const }; };
(async () => {
  console.log("weights", SSIMULACRA2_WEIGHT_COUNT);
  const src = await sharp("../../../../shared/fixtures/images/chelsea.png").toBuffer();
  const ref = await raw(sharp(src));
  console.log(ref.width, ref.height);
  let t = performance.now();
  console.log("identity", ssimulacra2(ref, ref), (performance.now() - t).toFixed(0), "ms");
  for (const q of [10, 30, 50, 70, 75, 90, 95]) {
    const j = await sharp(ref.data, { raw: { width: ref.width, height: ref.height, channels: 3 } }).jpeg({ quality: q }).toBuffer();
    t = performance.now();
    const sc = ssimulacra2(ref, await raw(sharp(j)));
    console.log(q, j.length, sc.toFixed(2), (performance.now() - t).toFixed(0), "ms");
  }
})();
