"""OpenCV references for the clahe kernel (run by generate.sh with Debian's python3-opencv).

Our tileSize is in pixels; OpenCV's createCLAHE takes a tile grid, so the grid used here is
ceil(width / tileSize) x ceil(height / tileSize), exactly as the kernel maps it.
"""
import math
import os
import sys

import cv2

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "..", "fixtures", "images")


def clahe_for(shape, clip_limit, tile_size):
    height, width = shape[:2]
    grid = (math.ceil(width / tile_size), math.ceil(height / tile_size))
    return cv2.createCLAHE(clipLimit=clip_limit, tileGridSize=grid)


def grey_case(fixture, clip_limit, tile_size, out):
    """Plain single-channel CLAHE: checks the tiled algorithm itself (claheChannel)."""
    grey = cv2.imread(os.path.join(FIXTURES, fixture), cv2.IMREAD_GRAYSCALE)
    cv2.imwrite(os.path.join(HERE, out), clahe_for(grey.shape, clip_limit, tile_size).apply(grey))


def lab_case(fixture, clip_limit, tile_size, out):
    """CLAHE on L of 8-bit Lab (L scaled 0-255), as the clahe transformation does it."""
    bgr = cv2.imread(os.path.join(FIXTURES, fixture), cv2.IMREAD_COLOR)
    lab = cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB)
    lab[:, :, 0] = clahe_for(bgr.shape, clip_limit, tile_size).apply(lab[:, :, 0])
    cv2.imwrite(os.path.join(HERE, out), cv2.cvtColor(lab, cv2.COLOR_LAB2BGR))


def random_cases():
    """Odd-sized noise with every padding case: the grid divides neither, one or both sides."""
    import numpy as np

    rng = np.random.default_rng(20261122)
    for width, height in ((37, 23), (40, 21), (33, 30), (1, 9)):
        grey = rng.integers(0, 256, size=(height, width), dtype=np.uint8)
        name = f"clahe-random-{width}x{height}"
        cv2.imwrite(os.path.join(HERE, f"{name}.png"), grey)
        for clip_limit, tile_size in ((1.5, 2), (4.0, 3), (2.0, 5), (40.0, 8), (3.0, 64)):
            out = clahe_for(grey.shape, clip_limit, tile_size).apply(grey)
            cv2.imwrite(os.path.join(HERE, f"{name}-c{clip_limit:g}-t{tile_size}.png"), out)


if __name__ == "__main__":
    print("OpenCV", cv2.__version__, file=sys.stderr)
    # camera.png is 512x512: tile 16 divides it (32x32 grid), tile 24 does not (22x22, padded).
    grey_case("camera.png", 3.0, 16, "clahe-camera-grey-c3-t16.png")
    grey_case("camera.png", 2.0, 24, "clahe-camera-grey-c2-t24.png")
    # Tiles under 16 px take the kernel's small-tile path: 2x2 (256x256 grid) and 3x3 (171x171, padded).
    grey_case("camera.png", 40.0, 2, "clahe-camera-grey-c40-t2.png")
    grey_case("camera.png", 2.0, 3, "clahe-camera-grey-c2-t3.png")
    # coffee.png is 600x400: tile 20 divides it (30x20 grid), tile 16 does not (38x25, padded).
    lab_case("coffee.png", 3.0, 20, "clahe-coffee-lab-c3-t20.png")
    lab_case("coffee.png", 3.0, 16, "clahe-coffee-lab-c3-t16.png")
    lab_case("camera.png", 3.0, 16, "clahe-camera-lab-c3-t16.png")
    random_cases()
