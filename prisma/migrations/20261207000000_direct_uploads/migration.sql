-- Direct-to-S3 multipart uploads while they are pending: the staging key and S3 upload id, the
-- declared size and when it expires (then the sweep aborts it and removes the row).

-- CreateTable
CREATE TABLE "direct_uploads" (
    "id" UUID NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "user_id" TEXT,
    "key" TEXT NOT NULL,
    "s3_upload_id" TEXT NOT NULL,
    "filename" TEXT NOT NULL,
    "collection_id" UUID,
    "size" INTEGER NOT NULL,
    "part_count" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "direct_uploads_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "direct_uploads_expires_at_idx" ON "direct_uploads"("expires_at");
