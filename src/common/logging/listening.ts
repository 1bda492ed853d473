/**
 * The database of DATABASE_URL in words, never its password (nor its user): a SQLite file's path, or
 * a MySQL/MariaDB server's host, port and database. Whoever started the wrong one sees it at once.
 */
export function databaseOf(url: string): string {
  if (url.startsWith('sqlite:')) return `SQLite ${url.slice('sqlite:'.length)}`;
  try {
    const parsed = new URL(url);
    return `MySQL ${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return 'MySQL';
  }
}

/**
 * Where the API, its docs and (unless CONSOLE_ENABLED=false) the console are, once the server listens
 * on `port`, and the database it uses (`databaseOf`).
 */
export function listening(port: number, consoleEnabled: boolean, databaseUrl: string) {
  const base = `http://localhost:${port}`;
  const database = databaseOf(databaseUrl);
  const where = { api: `${base}/api/v1/`, docs: `${base}/api/docs` };
  if (!consoleEnabled)
    return {
      msg: `LicenseGate is listening: the API at ${where.api}, its docs at ${where.docs}; database: ${database}`,
      ...where,
      database,
    };
  const consoleUrl = `${base}/console/`;
  return {
    msg: `LicenseGate is listening: the API at ${where.api}, its docs at ${where.docs}, the console at ${consoleUrl}; database: ${database}`,
    ...where,
    console: consoleUrl,
    database,
  };
}

/**
 * The line of a service with no user yet: where the first account is made with the setup code, which
 * works until the first user exists (docs/security.md#the-first-account). Without the console, the API.
 */
export function noAccountYet(publicUrl: string, code: string, consoleEnabled: boolean): string {
  return consoleEnabled
    ? `No account yet: open ${publicUrl}/console/#/setup/${code} to create the first one.`
    : `No account yet: create the first one with POST ${publicUrl}/api/v1/auth/setup and the code ${code}.`;
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
