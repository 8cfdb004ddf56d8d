-- API keys, the audit log, daily usage and per-workspace quotas.

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "scopes" TEXT[],
    "prefix" TEXT NOT NULL,
    "secret_hash" CHAR(64) NOT NULL,
    "created_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "api_keys_workspace_id_created_at_idx" ON "api_keys"("workspace_id", "created_at");

-- CreateTable
CREATE TABLE "audit_events" (
    "id" UUID NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "action" TEXT NOT NULL,
    "actor" TEXT,
    "target" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "audit_events_workspace_id_at_idx" ON "audit_events"("workspace_id", "at" DESC);

-- CreateTable
CREATE TABLE "usage_daily" (
    "workspace_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "uploads" INTEGER NOT NULL DEFAULT 0,
    "renders" BIGINT NOT NULL DEFAULT 0,
    "egress_bytes" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "usage_daily_pkey" PRIMARY KEY ("workspace_id","day")
);

-- CreateTable
CREATE TABLE "usage_reports" (
    "id" TEXT NOT NULL,
    "ingested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_reports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workspace_quotas" (
    "workspace_id" TEXT NOT NULL,
    "storage_bytes" BIGINT,
    "assets" INTEGER,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workspace_quotas_pkey" PRIMARY KEY ("workspace_id")
);
