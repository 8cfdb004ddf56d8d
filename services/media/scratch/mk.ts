import sharp from "sharp";
(async () => {
  for (const f of ["astronaut.png", "camera.png", "chelsea.png", "coffee.png", "rocket.jpg"]) {
    const out = `test/golden/inputs/${f.replace(/\.\w+$/, "")}.jpg`;
    await sharp(`../../fixtures/images/${f}`).resize({ width: 96 }).jpeg({ quality: 90 }).toFile(out);
  }
})();
