/** Browser stand-in for node:fs: the client reads files from disk only under Node; a browser uploads Blobs. */
export function openAsBlob(): never {
  throw new Error("uploading from a path needs Node; pass a File or Blob");
}
