import type { CollectionDto } from "@media-platform/client";

/** A select's options for "none or one of these collections"; the empty value means none. */
export function CollectionOptions({ collections, none }: { collections: CollectionDto[]; none: string }) {
  return (
    <>
      <option value="">{none}</option>
      {collections.map((c) => (
        <option key={c.id} value={c.id}>
          {c.name}
        </option>
      ))}
    </>
  );
}
