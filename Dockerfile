FROM node:22-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --loglevel=warn
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY src ./src
COPY console ./console
RUN npm run build && npm prune --omit=dev --loglevel=warn

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
EXPOSE 3000
CMD ["node", "--max-old-space-size=384", "--max-semi-space-size=8", "dist/src/main.js"]
