/**
 * The public surface of `@media-platform/media` (the package's "." entry): the media service as
 * a library, to start it in-process and read its configuration. Code outside services/media
 * relies on these names only; everything else under src/ is internal. The names are the process
 * entry's (src/index.ts), whose import starts nothing: it runs the service only as the main module.
 */
export * from "../index";
