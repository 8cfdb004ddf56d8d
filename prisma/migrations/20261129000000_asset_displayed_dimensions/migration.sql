-- An asset's width and height are the displayed ones, after its EXIF orientation: orientations
-- 5-8 turn the stored image a quarter, so those rows swap the stored size they were written with.
UPDATE "assets" SET "width" = "height", "height" = "width"
 WHERE "exif" IS NOT NULL AND "exif"->>'orientation' IN ('5', '6', '7', '8');
