/**
 * The studio's words, written for the people who use it: what each step does and one tooltip per
 * parameter. The media service's catalog (GET /transformations) describes the same steps for
 * developers (spec references, setting names); its text is shown only for a step this table does
 * not know yet. Every step and parameter of contracts' table has an entry here (checked by
 * apps/library/test/studio-help.test.ts).
 */

export interface StepHelp {
  /** The step's name in the list of steps. */
  label: string;
  /** One or two sentences: what the step does to the picture. */
  about: string;
  /** A tooltip per parameter. */
  params: Record<string, string>;
}

const OFFSET_X = "Moves it right (positive) or left (negative), in pixels.";
const OFFSET_Y = "Moves it down (positive) or up (negative), in pixels.";
const OPACITY = "How see-through it is: 0 is invisible, 1 is solid.";
const COLOUR = "A colour such as ffffff (white) or 000000 (black), or a name like red.";

export const STUDIO_HELP: Record<string, StepHelp> = {
  crop: {
    label: "Crop",
    about: "Cuts out a rectangle of the picture.",
    params: {
      width: "How wide the cut-out is, in pixels.",
      height: "How tall the cut-out is, in pixels.",
      x: "Where the cut-out starts from the left edge, in pixels. Leave unset to place it by “gravity”.",
      y: "Where the cut-out starts from the top edge, in pixels. Leave unset to place it by “gravity”.",
      gravity:
        "Which part to keep: the centre, a side, the focal point you set on the asset, or the most interesting part (attention, entropy).",
    },
  },
  "color-balance": {
    label: "Colour balance",
    about: "Shifts the colours towards warmer or cooler tones, in the shadows, midtones or highlights.",
    params: {
      cyan: "Negative adds cyan (cooler), positive adds red (warmer).",
      magenta: "Negative adds green, positive adds magenta.",
      yellow: "Negative adds blue, positive adds yellow.",
      target: "Which tones change: the dark ones (shadows), the middle ones or the bright ones (highlights).",
    },
  },
  clahe: {
    label: "Local contrast",
    about: "Brings out detail in flat or hazy areas by raising contrast region by region.",
    params: {
      clipLimit: "How strong the effect is. Higher values show more detail but can look harsh.",
      tileSize: "Size of the regions, in pixels. Smaller regions bring out finer detail.",
    },
  },
  grayscale: {
    label: "Black and white",
    about: "Turns the picture into shades of grey.",
    params: { lightness: "Makes the result darker (negative) or lighter (positive)." },
  },
  fit: {
    label: "Fit in a frame",
    about: "Shrinks the whole picture to fit a frame of exactly this size, and fills the rest with a colour.",
    params: {
      width: "Width of the frame, in pixels.",
      height: "Height of the frame, in pixels.",
      background: `Colour around the picture. ${COLOUR}`,
    },
  },
  saturation: {
    label: "Saturation",
    about: "Makes colours more or less vivid.",
    params: { value: "1 leaves colours as they are, 0 removes them, 2 doubles their strength." },
  },
  "add-noise": {
    label: "Grain",
    about: "Adds film-like grain. The same link always gives the same grain.",
    params: {
      type: "The kind of grain: soft (gaussian), even (uniform), or black and white specks (salt-pepper).",
      amount: "How much grain, in percent.",
    },
  },
  brightness: {
    label: "Brightness",
    about: "Makes the picture brighter or darker.",
    params: { value: "1 leaves it as it is; below 1 is darker, above 1 brighter." },
  },
  wave: {
    label: "Wave",
    about: "Bends the picture into waves. The picture gets taller by twice the wave height.",
    params: {
      amplitude: "Height of the waves, in pixels.",
      wavelength: "Distance from one wave to the next, in pixels.",
    },
  },
  channelManipulation: {
    label: "Colour channels",
    about: "Turns the red, green and blue in the picture up or down separately.",
    params: {
      red: "1 keeps the red as it is, 0 removes it, 2 doubles it.",
      green: "1 keeps the green as it is, 0 removes it, 2 doubles it.",
      blue: "1 keeps the blue as it is, 0 removes it, 2 doubles it.",
    },
  },
  sharpen: {
    label: "Sharpen",
    about: "Makes edges crisper.",
    params: { value: "How much: 0 changes nothing; high values can leave halos around edges." },
  },
  avatar: {
    label: "Profile picture",
    about:
      "A square or round picture centred on a face (or on the focal point you set on the asset), for profile photos.",
    params: {
      size: "Width and height of the result, in pixels.",
      shape: "Square or circle.",
      border: "Width of a border drawn inside the picture, in pixels.",
      border_color: `Colour of the border. ${COLOUR}`,
    },
  },
  thumbnail: {
    label: "Thumbnail",
    about: "A small square of the picture, centred (or on the focal point you set on the asset).",
    params: {
      size: "Width and height of the square, in pixels.",
      quality:
        "Image quality from 1 to 100: lower means smaller files with more visible artefacts. “auto” picks the smallest file that still looks as good as the original.",
    },
  },
  exposure: {
    label: "Exposure",
    about: "Brightens or darkens the picture the way a camera's exposure does.",
    params: { value: "In stops: +1 is twice as bright, -1 half as bright." },
  },
  solarize: {
    label: "Solarize",
    about: "Inverts the brightest parts of the picture, for a surreal look.",
    params: { threshold: "Parts brighter than this (0 to 255) are inverted." },
  },
  threshold: {
    label: "Black or white",
    about: "Makes every pixel either pure black or pure white.",
    params: { value: "Pixels brighter than this (0 to 255) turn white, the rest black." },
  },
  resize: {
    label: "Resize",
    about: "Makes the picture smaller to fit a width and/or height. It never gets larger unless you allow it.",
    params: {
      width: "The width to fit, in pixels.",
      height: "The height to fit, in pixels.",
      fit: "Keep the whole picture inside the box (inside), fill the box and cut off the rest (cover), fill the box with a background around the picture (contain), or stretch it (fill).",
      enlarge: "Allow a small picture to be made larger.",
      dpr: "For high-resolution screens: 2 makes the result twice as many pixels wide and tall.",
      background: `Colour around the picture when “fit” is contain. ${COLOUR}`,
    },
  },
  format: {
    label: "File format",
    about: "Saves the result as JPEG, PNG, WebP, AVIF or GIF instead of the original's format.",
    params: {
      type: "The file format of the result.",
      quality:
        "Image quality from 1 to 100 for JPEG, WebP and AVIF: lower means smaller files with more visible artefacts. “auto” picks the smallest file that still looks as good as the original.",
    },
  },
  frame: {
    label: "Still frame",
    about: "Takes one frame of an animated GIF or WebP as a still picture.",
    params: { index: "Which frame: 0 is the first." },
  },
  page: {
    label: "PDF page",
    about: "Shows one page of a PDF document. Without this step a PDF shows its first page.",
    params: { index: "Which page: 1 is the first." },
  },
  "max-bytes": {
    label: "File size limit",
    about: "Keeps the file under a size: the quality is lowered, then the picture made smaller, until it fits.",
    params: { value: "The largest file size allowed, in bytes (100000 is about 100 KB)." },
  },
  overlay: {
    label: "Watermark",
    about: "Places another picture of your library (a logo, a watermark) on top.",
    params: {
      asset: "The id of the picture to place on top (shown on its asset page address).",
      gravity: "Where it goes: the centre, a side or a corner.",
      x: OFFSET_X,
      y: OFFSET_Y,
      scale: "Its width as a share of the picture's width: 0.25 is a quarter. Unset keeps its own size.",
      opacity: OPACITY,
      tile: "Repeat it across the whole picture.",
    },
  },
  text: {
    label: "Text",
    about: "Writes text on the picture. Long text wraps onto more lines.",
    params: {
      text: "The words to write.",
      size: "Letter size, in pixels.",
      color: `Colour of the letters. ${COLOUR}`,
      font: "The typeface: sans, serif or mono (typewriter).",
      gravity: "Where it goes: the centre, a side or a corner.",
      x: OFFSET_X,
      y: OFFSET_Y,
      opacity: OPACITY,
      background: `Colour of a box behind the text. Unset: no box. ${COLOUR}`,
      padding: "Space between the text and the edge of its box, in pixels.",
    },
  },
  redact: {
    label: "Hide faces or areas",
    about: "Blurs or pixelates faces, or an area you choose, so they cannot be recognised.",
    params: {
      faces: "Hide every face found in the picture.",
      region:
        "An area to hide: left, top, width and height as fractions of the picture, e.g. 0.1,0.1,0.3,0.2 starts 10% from the left and top.",
      mode: "Blur it or turn it into blocks (pixelate).",
      strength: "How strongly, from 1 to 100.",
    },
  },
};
