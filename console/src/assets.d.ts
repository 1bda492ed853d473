// Styles are bundled by esbuild (console/build.mjs) into app-<hash>.css.
declare module '*.css';
