// Imported first by the entry point, before any module that loads sharp (see sizeUvPool).
import { sizeUvPool } from ".";

sizeUvPool();
