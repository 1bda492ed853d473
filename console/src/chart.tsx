// Plain SVG charts, readable by assistive tech and by tests: the SVG is an image with a title and a
// description, and the same numbers are in a table beside it (no canvas).
import { useId } from 'preact/hooks';

export interface Bar {
  label: string;
  value: number;
}

export function BarChart({ title, description, bars }: { title: string; description: string; bars: Bar[] }) {
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
                <th scope="col">Day</th>
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
