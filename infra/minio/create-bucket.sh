#!/bin/sh
# One-shot MinIO initialisation (the `minio-init` service of docker-compose.yml and the
# GitHub workflow): waits for MinIO, creates the bucket both services share, and a service
# account whose policy allows only that bucket. Idempotent: safe to run on every `up`.
#
# Environment:
#   MINIO_URL             e.g. http://minio:9000
#   MINIO_ROOT_USER       MinIO root credentials (admin only, never given to the services)
#   MINIO_ROOT_PASSWORD
#   S3_BUCKET             bucket to create (3-63 lowercase letters, digits, dots, hyphens)
#   S3_ACCESS_KEY_ID      service account the services use (optional: without both, the
#   S3_SECRET_ACCESS_KEY  services must use the root credentials)
#   MINIO_WAIT_SECONDS    how long to wait for MinIO (default 60)
set -eu

: "${MINIO_URL:?MINIO_URL is required}"
: "${MINIO_ROOT_USER:?MINIO_ROOT_USER is required}"
: "${MINIO_ROOT_PASSWORD:?MINIO_ROOT_PASSWORD is required}"
: "${S3_BUCKET:?S3_BUCKET is required}"
wait_seconds="${MINIO_WAIT_SECONDS:-60}"

waited=0
until mc alias set local "$MINIO_URL" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null 2>&1; do
  waited=$((waited + 1))
  if [ "$waited" -ge "$wait_seconds" ]; then
    echo "minio-init: MinIO at $MINIO_URL not reachable after ${wait_seconds}s" >&2
    exit 1
  fi
  sleep 1
done

mc mb --ignore-existing "local/$S3_BUCKET"
# Objects are private: media is served by the media service, never straight from the bucket.
mc anonymous set none "local/$S3_BUCKET"

if [ -n "${S3_ACCESS_KEY_ID:-}" ] && [ -n "${S3_SECRET_ACCESS_KEY:-}" ] && [ "$S3_ACCESS_KEY_ID" != "$MINIO_ROOT_USER" ]; then
  policy_file="$(mktemp)"
  cat >"$policy_file" <<POLICY
{
  "Version": "2012-10-17",
  "Statement": [
    { "Effect": "Allow", "Action": ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"], "Resource": ["arn:aws:s3:::$S3_BUCKET"] },
    { "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"], "Resource": ["arn:aws:s3:::$S3_BUCKET/*"] }
  ]
}
POLICY
  mc admin user add local "$S3_ACCESS_KEY_ID" "$S3_SECRET_ACCESS_KEY"
  mc admin policy create local "$S3_BUCKET-rw" "$policy_file"
  # Attaching an already attached policy fails; that is fine on a re-run (checked without grep:
  # the mc image is minimal).
  if ! mc admin policy attach local "$S3_BUCKET-rw" --user "$S3_ACCESS_KEY_ID"; then
    info="$(mc admin user info local "$S3_ACCESS_KEY_ID")"
    case "$info" in
      *"$S3_BUCKET-rw"*) echo "minio-init: policy $S3_BUCKET-rw already attached" ;;
      *) echo "minio-init: could not attach policy $S3_BUCKET-rw to $S3_ACCESS_KEY_ID" >&2; exit 1 ;;
    esac
  fi
  rm -f "$policy_file"
fi

echo "minio-init: bucket $S3_BUCKET ready"
