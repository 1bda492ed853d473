// Small building blocks: loading data, forms whose 422 field errors sit beside their fields, errors
// shown with the envelope's message, and confirmations that stay on the keyboard.
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure, type FieldErrors, type Page } from './api';

/**
 * A ref whose element takes the keyboard when it is drawn (and again when `deps` change); with
 * `within`, the first of its descendants that matches. A layout effect: the focus moves in the
 * render that draws the element, before the browser takes another key or click. A plain effect runs
 * after paint, up to 100 ms later, and a focus moved then lands in the middle of what someone (or a
 * test) has started typing in another field.
 */
export function useFocusOnDraw<T extends HTMLElement>(deps: unknown[] = [], within?: string) {
  const ref = useRef<T>(null);
  useLayoutEffect(() => {
    (within ? ref.current?.querySelector<HTMLElement>(within) : ref.current)?.focus();
  }, deps); // `deps` are the caller's
  return ref;
}

/** Loads with `load` (again when `deps` change or on reload()); the error is the API's. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: ApiFailure; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error: toFailure(error), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]); // `deps` are the caller's, for `load`
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/**
 * A cursor list: the first page (again when `deps` change or on reload()), and more() appends the
 * next one while there is one.
 */
export function useCursorList<T>(load: (cursor?: string) => Promise<Page<T>>, deps: unknown[]) {
  const first = useLoad(() => load(), deps);
  const [extra, setExtra] = useState<{ base?: Page<T>; rows: T[]; next: string | null } | null>(null);
  const [more, setMore] = useState<{ loading: boolean; error?: ApiFailure }>({ loading: false });
  // Pages appended to an older first page are dropped when it is loaded again.
  const current = extra && extra.base === first.data ? extra : null;
  const data: Page<T> | undefined = first.data && {
    data: [...first.data.data, ...(current?.rows ?? [])],
    next_cursor: current ? current.next : first.data.next_cursor,
  };
  const loadMore = async () => {
    if (!first.data || !data?.next_cursor) return;
    setMore({ loading: true });
    try {
      const page = await load(data.next_cursor);
      setExtra({ base: first.data, rows: [...(current?.rows ?? []), ...page.data], next: page.next_cursor });
      setMore({ loading: false });
    } catch (error) {
      setMore({ loading: false, error: toFailure(error) });
    }
  };
  return { ...first, data, error: first.error ?? more.error, more: loadMore, loadingMore: more.loading };
}

/** "Show more" under a cursor list, while it has a next page. */
export function MoreButton({
  list,
  what,
}: {
  list: ReturnType<typeof useCursorList<unknown>>;
  what: string;
}) {
  if (!list.data?.next_cursor) return null;
  return (
    <button type="button" disabled={list.loadingMore} onClick={() => void list.more()}>
      Show more {what}
    </button>
  );
}

/**
 * A cursor list as a table: "Loading…" until the first page, `empty` when there is no row, else the
 * rows under their column headings (and an Actions column with `actions`); then "Show more". `row`
 * gives each item's <tr>.
 */
export function ListTable<T>(props: {
  list: ReturnType<typeof useCursorList<T>>;
  /** What the rows are, plural: "Loading plans…", "Show more plans". */
  what: string;
  empty: ComponentChildren;
  caption: ComponentChildren;
  columns: string[];
  actions?: boolean;
  row: (item: T) => JSX.Element;
}) {
  const { list } = props;
  return (
    <>
      {list.loading && !list.data ? <Loading what={props.what} /> : null}
      {list.data && list.data.data.length === 0 ? <p>{props.empty}</p> : null}
      {list.data && list.data.data.length > 0 ? (
        <table>
          <caption>{props.caption}</caption>
          <thead>
            <tr>
              {props.columns.map((column) => (
                <th scope="col" key={column}>
                  {column}
                </th>
              ))}
              {props.actions ? <th scope="col">Actions</th> : null}
            </tr>
          </thead>
          <tbody>{list.data.data.map(props.row)}</tbody>
        </table>
      ) : null}
      <MoreButton list={list} what={props.what} />
    </>
  );
}

export const toFailure = (error: unknown): ApiFailure =>
  error instanceof ApiFailure
    ? error
    : new ApiFailure(error instanceof Error ? error.message : String(error), 0);

/** The envelope's message, announced. */
export function ErrorMessage({ error }: { error?: ApiFailure | null }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return <p aria-live="polite">Loading {what}…</p>;
}

type Values = Record<string, string | boolean | File | null>;
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * A form's values, its submit state and its errors: the message of a failed submit, and the field
 * errors of a 422, each shown beside its field.
 */
export function useForm<V extends Values>(initial: V) {
  const [values, setValues] = useState<V>(initial);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (name: keyof V, value: V[keyof V]) => setValues((v) => ({ ...v, [name]: value }));
  const run = async (action: (values: V) => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await action(values);
    } catch (failure) {
      setError(toFailure(failure));
    } finally {
      setBusy(false);
    }
  };
  /** An onSubmit (or onClick) handler that runs `action` with the values, its failure shown by the form. */
  const submit = (action: (values: V) => Promise<unknown>) => (event: Event) => {
    event.preventDefault();
    void run(action);
  };
  const fields: FieldErrors = error?.fields ?? {};
  return { values, set, setValues, error, setError, busy, submit, fields };
}
export type Form<V extends Values> = ReturnType<typeof useForm<V>>;

interface FieldProps<V extends Values> {
  form: Form<V>;
  name: keyof V & string;
  label: string;
  type?: string;
  hint?: string;
  required?: boolean;
  /** Field errors under another name (the API's) than the form's. */
  errorKey?: string;
  options?: { value: string; label: string }[];
  multiline?: boolean;
  min?: number;
  minLength?: number;
  autoComplete?: string;
}

/** A labelled input with its hint and its field errors beside it (aria-describedby, aria-invalid). */
export function Field<V extends Values>(props: FieldProps<V>) {
  const { form, name, label, type = 'text', hint, required, options, multiline } = props;
  const id = `f-${useId()}`;
  const messages = form.fields[props.errorKey ?? name] ?? [];
  const described = [hint ? `${id}-hint` : '', messages.length ? `${id}-error` : '']
    .filter(Boolean)
    .join(' ');
  const common = {
    id,
    name,
    required,
    'aria-invalid': messages.length > 0 ? ('true' as const) : undefined,
    'aria-describedby': described || undefined,
  };
  const value = form.values[name];
  let control: JSX.Element;
  if (type === 'checkbox') {
    control = (
      <input
        {...common}
        type="checkbox"
        checked={value === true}
        onChange={(e) => form.set(name, e.currentTarget.checked as V[keyof V])}
      />
    );
  } else if (type === 'file') {
    control = (
      <input
        {...common}
        type="file"
        onChange={(e) => form.set(name, (e.currentTarget.files?.[0] ?? null) as V[keyof V])}
      />
    );
  } else if (options) {
    control = (
      <select
        {...common}
        value={text(value)}
        onChange={(e) => form.set(name, e.currentTarget.value as V[keyof V])}
      >
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    );
  } else if (multiline) {
    control = (
      <textarea
        {...common}
        rows={4}
        value={text(value)}
        onInput={(e) => form.set(name, e.currentTarget.value as V[keyof V])}
      />
    );
  } else {
    control = (
      <input
        {...common}
        type={type as 'text'}
        min={props.min}
        minLength={props.minLength}
        autoComplete={props.autoComplete ?? 'off'}
        value={text(value)}
        onInput={(e) => form.set(name, e.currentTarget.value as V[keyof V])}
      />
    );
  }
  return (
    <div class={type === 'checkbox' ? 'field check' : 'field'}>
      {type === 'checkbox' ? control : null}
      <label for={id} class={required ? 'required' : undefined}>
        {label}
      </label>
      {type === 'checkbox' ? null : control}
      {hint ? (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      ) : null}
      {messages.length ? (
        <span id={`${id}-error`} class="field-error">
          {messages.join(' ')}
        </span>
      ) : null}
    </div>
  );
}

/** A value a form shows but does not send: a read-only input, labelled and reachable by the keyboard. */
export function ReadOnlyField({ label, value, hint }: { label: string; value: string; hint?: string }) {
  const id = `f-${useId()}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} type="text" readOnly value={value} aria-describedby={hint ? `${id}-hint` : undefined} />
      {hint ? (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      ) : null}
    </div>
  );
}

/** A form with its heading, its error message and its submit button. */
export function FormBox<V extends Values>(props: {
  form: Form<V>;
  title: string;
  submitLabel: string;
  onSubmit: (values: V) => Promise<unknown>;
  children: ComponentChildren;
}) {
  const headingId = `h-${useId()}`;
  return (
    <form class="box" aria-labelledby={headingId} onSubmit={props.form.submit(props.onSubmit)} noValidate>
      <h3 id={headingId}>{props.title}</h3>
      <ErrorMessage error={props.form.error} />
      <div class="fields">{props.children}</div>
      <button type="submit" disabled={props.form.busy}>
        {props.submitLabel}
      </button>
    </form>
  );
}

/** A FormBox that edits a row of the list above it: it takes the keyboard to its first field, and Cancel closes it. */
export function EditBox<V extends Values>(props: {
  form: Form<V>;
  title: string;
  submitLabel: string;
  onSubmit: (values: V) => Promise<unknown>;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  // The form opens below the list: the keyboard goes to its first field.
  const box = useFocusOnDraw<HTMLDivElement>([], 'input');
  return (
    <div ref={box}>
      <FormBox
        form={props.form}
        title={props.title}
        submitLabel={props.submitLabel}
        onSubmit={props.onSubmit}
      >
        {props.children}
        <button type="button" onClick={props.onCancel}>
          Cancel editing
        </button>
      </FormBox>
    </div>
  );
}

/**
 * A button whose action is asked again before it runs (delete, revoke, lock...): the question and
 * its two answers take the button's place, focus on the answer that does nothing.
 */
export function ConfirmButton(props: {
  label: string;
  /** What it acts on, said to screen readers after the label (the row already shows it). */
  object?: string;
  question: string;
  confirmLabel?: string;
  danger?: boolean;
  onConfirm: () => Promise<unknown>;
  onError: (error: ApiFailure) => void;
  /** Asked with the question, before its answers (how long a rolled key keeps working). */
  children?: ComponentChildren;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const cancel = useRef<HTMLButtonElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const asked = useRef(false);
  useLayoutEffect(() => {
    // Focus goes to the question's Cancel, and back to the button once it is answered (if it is still
    // there), unless the answer took it elsewhere (a rolled key's box): then it stays there.
    const lost = () => !document.activeElement || document.activeElement === document.body;
    if (asking) cancel.current?.focus();
    else if (asked.current && lost()) button.current?.focus();
    asked.current = asking;
  }, [asking]);
  if (!asking)
    return (
      <button
        type="button"
        ref={button}
        class={props.danger ? 'danger' : undefined}
        onClick={() => setAsking(true)}
      >
        {props.label}
        {props.object ? <Hidden> {props.object}</Hidden> : null}
      </button>
    );
  const run = async () => {
    setBusy(true);
    try {
      await props.onConfirm();
    } catch (error) {
      props.onError(toFailure(error));
    } finally {
      setBusy(false);
      setAsking(false);
    }
  };
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span> {props.children}
      <button
        type="button"
        class={props.danger ? 'danger' : undefined}
        disabled={busy}
        onClick={() => void run()}
      >
        {props.confirmLabel ?? `Yes, ${props.label.toLowerCase()}`}
      </button>{' '}
      <button type="button" ref={cancel} onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/**
 * Words for screen readers only: a row's buttons say "Mark paid" to the eye, which reads the row's
 * name beside them, and "Mark shop.example.com paid" to a screen reader, which lists buttons alone.
 */
export function Hidden({ children }: { children: ComponentChildren }) {
  return <span class="visually-hidden">{children}</span>;
}

/** "yes" / "no" for booleans, a dash for null, else the value. */
export function show(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

/** A date-time for people: the ISO text as the API sends it, in UTC, without milliseconds. */
export const when = (iso: string | null | undefined) =>
  iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '—';

/**
 * A project's or domain's paid state: during a payment connector's grace (docs/payments.md) it is
 * still paid, until `grace_until`, and the vendor should see that it is about to close.
 */
export const paid = (x: { has_paid: boolean; grace_until: string | null }) =>
  x.has_paid && x.grace_until ? `yes, until ${when(x.grace_until)} (payment grace)` : show(x.has_paid);

/** `<input type="datetime-local">` value (taken as UTC) to the API's ISO text; empty → null. */
export const isoFromLocal = (value: string): string | null =>
  value ? new Date(`${value}Z`).toISOString() : null;
export const localFromIso = (iso: string | null | undefined): string => (iso ? iso.slice(0, 16) : '');

/** A text field to the API's value: trimmed, and empty → null. */
export const textOrNull = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
/** A number field to the API's value: empty → null; anything else is sent as typed for the API to judge. */
export const intOrNull = (value: unknown): number | null =>
  typeof value === 'string' && value.trim() !== '' ? Number(value) : null;
