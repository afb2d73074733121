# syntax=docker/dockerfile:1
# The service image: one image for gateways (default) and inference nodes (ROLE=inference).
# Build: docker build -t tsfm .   Run: docker run -p 8000:8000 -v tsfm-data:/data tsfm

# Stage 1: production dependencies only (no compilers needed: native addons are N-API prebuilds).
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# onnxruntime-node's postinstall only fetches the CUDA provider (unused; off the npm registry):
# package.json's allowScripts denies it on npm >= 11.16, this variable (the package's own switch) on any npm.
RUN ONNXRUNTIME_NODE_INSTALL=skip npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Stage 2: the runtime, as the unprivileged `node` user.
FROM node:24-bookworm-slim AS runtime
# MALLOC_*: glibc gives the memory of large answers back (docs/operations.md, "Memory").
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
COPY cli ./cli
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const p=process.env.ROLE==='inference'?'/v2/health/ready':'/healthz';fetch('http://127.0.0.1:'+(process.env.PORT||8000)+p).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# --max-semi-space-size: the main thread's young generation capped (src/heap-flags.ts; docs/operations.md, "Memory").
CMD ["node", "--max-semi-space-size=16", "src/main.ts"]
