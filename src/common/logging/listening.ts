/** Where the API, its docs and (unless CONSOLE_ENABLED=false) the console are, once the server listens on `port`. */
export function listening(port: number, consoleEnabled: boolean) {
  const base = `http://localhost:${port}`;
  const where = { api: `${base}/api/v1/`, docs: `${base}/api/docs` };
  if (!consoleEnabled)
    return { msg: `LicenseGate is listening: the API at ${where.api}, its docs at ${where.docs}`, ...where };
  const consoleUrl = `${base}/console/`;
  return {
    msg: `LicenseGate is listening: the API at ${where.api}, its docs at ${where.docs}, the console at ${consoleUrl}`,
    ...where,
    console: consoleUrl,
  };
}

/**
 * The listening line as the README quotes it, a plain sentence, for whoever started the service in
 * a terminal. Only there: piped stdout stays one JSON object a line, which log collectors parse line
 * by line (the JSON line says the same, with the addresses as fields).
 */
export function sayListening(
  msg: string,
  out: Pick<NodeJS.WriteStream, 'isTTY' | 'write'> = process.stdout,
): void {
  if (out.isTTY) out.write(`${msg}\n`);
}
