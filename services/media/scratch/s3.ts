import sharp from "sharp";
import { Ssimulacra2Reference } from "../src/perceptual/ssimulacra2";
const raw = async (s: sharp.Sharp) => { const { data, info } = await s.removeAlpha().raw().toBuffer({ resolveWithObject: true }); return { data, width: info.width, height: info.height, channels: 3 as const }; };
(async () => {
  const ref = await raw(sharp("../../../shared/fixtures/images/astronaut.png"));
  const j = await raw(sharp(await sharp(ref.data, { raw: { width: ref.width, height: ref.height, channels: 3 } }).jpeg({ quality: 70 }).toBuffer()));
  let t = performance.now(); const r = new Ssimulacra2Reference(ref); console.log("ref", (performance.now() - t).toFixed(0));
  for (let i = 0; i < 5; i++) { t = performance.now(); const s = r.score(j); console.log(s.toFixed(3), (performance.now() - t).toFixed(0), "ms"); }
})();
