// CSV the way spreadsheets read it (RFC 4180), safe to open: a cell that a spreadsheet would run as a
// formula (=, +, -, @, or a tab or carriage return first) is written with a leading apostrophe, so a
// license titled "=HYPERLINK(…)" is shown as text, never evaluated (docs/console.md#pages).

const FORMULA = /^[=+\-@\t\r]/;

/** One cell: null is empty, a formula is defused, and quotes, commas and line breaks are quoted. */
export function csvCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A header row and the rows, CRLF-separated, ending with a line break. */
export function toCsv(header: string[], rows: (string | number | boolean | null | undefined)[][]): string {
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

/** Hands `text` to the browser as a file download named `name` (nothing leaves the page). */
export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  // The click has started the download; the object URL is no longer needed once it has been read.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
