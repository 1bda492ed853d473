// A value to copy (an endpoint URL, a license key): copied with the clipboard API where the browser
// allows it; otherwise (and always) shown in a read-only field that selects itself on focus, to copy
// by hand. What happened is announced.
import { useState } from 'preact/hooks';
import { Hidden } from './ui';

export function CopyField({
  value,
  label,
  what,
  of,
}: {
  value: string;
  /** The field's accessible name, such as "Endpoint URL of Stripe live". */
  label: string;
  /** What the button copies, as its visible label says it: "endpoint URL", "key". */
  what: string;
  /** Whose it is, for screen readers, after the button's label ("of Stripe live"). */
  of?: string;
}) {
  const [said, setSaid] = useState('');
  const [manual, setManual] = useState(false);
  const copy = async () => {
    setSaid('');
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(value);
      setSaid('Copied');
    } catch {
      setManual(true);
      setSaid('Copy it from the field: select it and press Ctrl+C (Cmd+C).');
    }
  };
  return (
    <div class="copy">
      <input
        type="text"
        readOnly
        value={value}
        aria-label={label}
        class={manual ? 'manual' : undefined}
        onFocus={(e) => e.currentTarget.select()}
      />{' '}
      <button type="button" onClick={() => void copy()}>
        Copy {what}
        {of ? <Hidden> of {of}</Hidden> : null}
      </button>{' '}
      <span aria-live="polite" role="status" class="said">
        {said}
      </span>
    </div>
  );
}
