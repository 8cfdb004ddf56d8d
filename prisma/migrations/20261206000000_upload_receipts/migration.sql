-- Resumable (tus) and direct uploads: which asset a finished upload became, so a client that lost
-- the completing answer finds it with HEAD. The upload's bytes are gone by then; a receipt is
-- removed with the upload's expiry.

-- CreateTable
CREATE TABLE "upload_receipts" (
    "upload_id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "asset_id" UUID NOT NULL,
    "size" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upload_receipts_pkey" PRIMARY KEY ("upload_id")
);

-- CreateIndex
CREATE INDEX "upload_receipts_created_at_idx" ON "upload_receipts"("created_at");
