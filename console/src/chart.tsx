// Plain SVG charts, readable by assistive tech and by tests: the SVG is an image with a title and a
// description, and the same numbers are in a table beside it (no canvas).
import { useId } from 'preact/hooks';

export interface Bar {
  label: string;
  value: number;
  /** Where the table's row links to (a license's page). */
  href?: string;
  /** The bar's parts, summing to `value`, in the order of RankChart's `parts` (paid, unpaid, …). */
  parts?: number[];
  /** The count as the table says it, when it says more than the number (what the parts are). */
  text?: string;
}

export function BarChart({
  title,
  description,
  bars,
  labelHeading = 'Day',
}: {
  title: string;
  description: string;
  bars: Bar[];
  /** The heading of the table's first column. */
  labelHeading?: string;
}) {
  const id = useId();
  const width = 600;
  const height = 160;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const step = bars.length ? width / bars.length : width;
  return (
    <figure class="chart">
      <svg
        role="img"
        aria-labelledby={`${id}-t ${id}-d`}
        viewBox={`0 0 ${width} ${height + 20}`}
        preserveAspectRatio="none"
      >
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>{description}</desc>
        <line x1="0" y1={height} x2={width} y2={height} class="axis" />
        {bars.map((b, i) => {
          const h = (b.value / max) * (height - 10);
          return (
            <rect
              key={b.label}
              x={i * step + step * 0.15}
              y={height - h}
              width={step * 0.7}
              height={h}
              class="bar"
            >
              <title>{`${b.label}: ${b.value}`}</title>
            </rect>
          );
        })}
        <text x="0" y={height + 16} class="tick">
          {bars[0]?.label ?? ''}
        </text>
        <text x={width} y={height + 16} class="tick end">
          {bars[bars.length - 1]?.label ?? ''}
        </text>
      </svg>
      <figcaption>
        <details>
          <summary>{title}: the numbers</summary>
          <table>
            <thead>
              <tr>
                <th scope="col">{labelHeading}</th>
                <th scope="col">Count</th>
              </tr>
            </thead>
            <tbody>
              {bars.map((b) => (
                <tr key={b.label}>
                  <th scope="row">{b.label}</th>
                  <td>{b.value}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      </figcaption>
    </figure>
  );
}

/** One series of a stacked chart: its name and a value per bucket, in the buckets' order. */
export interface Series {
  key: string;
  label: string;
  values: number[];
}

/**
 * Stacked bars, one per bucket, one colour per series (a legend names them), and the numbers in a
 * table: a row per bucket, a column per series.
 */
export function StackedBarChart({
  title,
  description,
  buckets,
  series,
  bucketHeading,
}: {
  title: string;
  description: string;
  buckets: string[];
  series: Series[];
  bucketHeading: string;
}) {
  const id = useId();
  const width = 600;
  const height = 160;
  const sums = buckets.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = Math.max(1, ...sums);
  const step = buckets.length ? width / buckets.length : width;
  return (
    <figure class="chart">
      <svg
        role="img"
        aria-labelledby={`${id}-t ${id}-d`}
        viewBox={`0 0 ${width} ${height + 20}`}
        preserveAspectRatio="none"
      >
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>{description}</desc>
        <line x1="0" y1={height} x2={width} y2={height} class="axis" />
        {buckets.map((bucket, i) => {
          let top = height;
          return (
            <g key={bucket}>
              {series.map((s, n) => {
                const value = s.values[i] ?? 0;
                const h = (value / max) * (height - 10);
                top -= h;
                return value ? (
                  <rect
                    key={s.key}
                    x={i * step + step * 0.15}
                    y={top}
                    width={step * 0.7}
                    height={h}
                    class={`bar s${n}`}
                  >
                    <title>{`${bucket}, ${s.label}: ${value}`}</title>
                  </rect>
                ) : null;
              })}
            </g>
          );
        })}
        <text x="0" y={height + 16} class="tick">
          {buckets[0] ?? ''}
        </text>
        <text x={width} y={height + 16} class="tick end">
          {buckets[buckets.length - 1] ?? ''}
        </text>
      </svg>
      <ul class="legend" aria-hidden="true">
        {series.map((s, n) => (
          <li key={s.key}>
            <span class={`swatch s${n}`} /> {s.label}
          </li>
        ))}
      </ul>
      <figcaption>
        <details>
          <summary>{title}: the numbers</summary>
          <table>
            <thead>
              <tr>
                <th scope="col">{bucketHeading}</th>
                {series.map((s) => (
                  <th scope="col" key={s.key}>
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {buckets.map((bucket, i) => (
                <tr key={bucket}>
                  <th scope="row">{bucket}</th>
                  {series.map((s) => (
                    <td key={s.key}>{s.values[i] ?? 0}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      </figcaption>
    </figure>
  );
}

/** A part of RankChart's bars: its name, and its colour (s0 paid, s1 unpaid, s2 refused, s3 muted). */
export interface Part {
  name: string;
  tone: 's0' | 's1' | 's2' | 's3';
}

/**
 * Horizontal bars, largest first, each named beside it (a long name cut short: the table has it whole),
 * and a table (reasons, domains, countries). With `parts`, each bar is split into them, one colour per
 * part (a legend names them) and the table saying each part in words: colour is never all there is.
 */
export function RankChart({
  title,
  description,
  bars,
  labelHeading,
  valueHeading = 'Count',
  parts,
}: {
  title: string;
  description: string;
  bars: Bar[];
  labelHeading: string;
  /** The heading of the table's count column. */
  valueHeading?: string;
  /** The parts the bars are split into: their names, and their colour (as the stacked chart's series). */
  parts?: Part[];
}) {
  const id = useId();
  // Drawn at about the size it is shown (a column of the page), so that its labels stay readable.
  const row = 22;
  const width = 380;
  const labelWidth = 150;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const height = Math.max(row, bars.length * row);
  return (
    <figure class="chart rank">
      <svg role="img" aria-labelledby={`${id}-t ${id}-d`} viewBox={`0 0 ${width} ${height}`}>
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>{description}</desc>
        {bars.map((b, i) => (
          <g key={b.label}>
            <text x="0" y={i * row + 15} class="tick">
              {b.label.length > 22 ? (
                <>
                  <title>{b.label}</title>
                  {`${b.label.slice(0, 21)}…`}
                </>
              ) : (
                b.label
              )}
            </text>
            {parts && b.parts ? (
              b.parts.map((value, n) => {
                const part = parts[n];
                const x = labelWidth + (sumTo(b.parts ?? [], n) / max) * (width - labelWidth - 40);
                return part && value ? (
                  <rect
                    key={part.name}
                    x={x}
                    y={i * row + 3}
                    width={(value / max) * (width - labelWidth - 40)}
                    height={row - 6}
                    class={`bar ${part.tone}`}
                  >
                    <title>{`${b.label}: ${value} ${part.name.toLowerCase()}`}</title>
                  </rect>
                ) : null;
              })
            ) : (
              <rect
                x={labelWidth}
                y={i * row + 3}
                width={(b.value / max) * (width - labelWidth - 40)}
                height={row - 6}
                class="bar"
              >
                <title>{`${b.label}: ${b.value}`}</title>
              </rect>
            )}
            <text
              x={labelWidth + (b.value / max) * (width - labelWidth - 40) + 6}
              y={i * row + 15}
              class="tick"
            >
              {b.value}
            </text>
          </g>
        ))}
      </svg>
      {parts ? (
        <ul class="legend" aria-hidden="true">
          {parts.map((part) => (
            <li key={part.name}>
              <span class={`swatch ${part.tone}`} /> {part.name}
            </li>
          ))}
        </ul>
      ) : null}
      <figcaption>
        <table>
          <caption class="visually-hidden">{title}</caption>
          <thead>
            <tr>
              <th scope="col">{labelHeading}</th>
              <th scope="col">{valueHeading}</th>
            </tr>
          </thead>
          <tbody>
            {bars.map((b) => (
              <tr key={b.label}>
                <th scope="row">
                  {b.href ? (
                    <a href={b.href} title={b.label}>
                      {b.label}
                    </a>
                  ) : (
                    b.label
                  )}
                </th>
                <td>{b.text ?? b.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </figcaption>
    </figure>
  );
}

/** The sum of the first `n` parts: where part `n` starts. */
const sumTo = (parts: number[], n: number) => parts.slice(0, n).reduce((a, b) => a + b, 0);
