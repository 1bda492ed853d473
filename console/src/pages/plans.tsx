import { useState } from 'preact/hooks';
import { type ApiFailure, api, type Plan, type Project, unwrap } from '../api';
import type { Access } from '../app';
import { type Entitlements, formatEntitlements, parseEntitlements } from '../entitlements';
import {
  ConfirmButton,
  EditBox,
  ErrorMessage,
  Field,
  type Form,
  FormBox,
  Hidden,
  intOrNull,
  ListTable,
  Notice,
  show,
  useCursorList,
  useForm,
} from '../ui';

type PlanValues = {
  code: string;
  name: string;
  entitlements: string;
  max_domains: string;
  max_subdomains_per_domain: string;
  max_usage_per_day: string;
};
const NEW_PLAN: PlanValues = {
  code: '',
  name: '',
  entitlements: '',
  max_domains: '',
  max_subdomains_per_domain: '',
  max_usage_per_day: '',
};
const limitText = (n: number | null) => (n === null ? '' : String(n));

/** The form's values as the API takes them; the entitlements are checked first (entitlements.ts). */
const planBody = (v: PlanValues) => ({
  code: v.code.trim(),
  name: v.name,
  entitlements: parseEntitlements(v.entitlements),
  max_domains: intOrNull(v.max_domains),
  max_subdomains_per_domain: intOrNull(v.max_subdomains_per_domain),
  max_usage_per_day: intOrNull(v.max_usage_per_day),
});

/** A short reading of entitlements for the list. */
export const entitlementsText = (e: Entitlements) =>
  Object.keys(e).length === 0
    ? 'none'
    : Object.entries(e)
        .map(([code, value]) => `${code}: ${String(value)}`)
        .join(', ');

function PlanFields({ form }: { form: Form<PlanValues> }) {
  return (
    <>
      <Field
        form={form}
        name="code"
        label="Code"
        required
        hint="What the SDKs and webhooks name the plan by: lowercase letters, digits, _ and -, e.g. pro."
      />
      <Field form={form} name="name" label="Name" required />
      <Field
        form={form}
        name="entitlements"
        label="Entitlements"
        multiline
        hint='One "code = value" a line: true or false, an integer, or text, e.g. sso = true, seats = 5, meter.ai_credits = 1000 (a monthly quota).'
      />
      <Field
        form={form}
        name="max_domains"
        label="Max domains"
        type="number"
        min={0}
        hint="Empty: no limit."
      />
      <Field
        form={form}
        name="max_subdomains_per_domain"
        label="Max subdomains per domain"
        type="number"
        min={0}
        hint="Empty: no limit."
      />
      <Field
        form={form}
        name="max_usage_per_day"
        label="Max checks per day"
        type="number"
        min={0}
        hint="Empty: no limit. A license's own limit, when set, comes first."
      />
    </>
  );
}

/** A project's plans: listed, added, edited, deleted. */
export function PlansTab({ access, project }: { access: Access; project: Project }) {
  const path = { project: project.id };
  const list = useCursorList(
    (cursor) =>
      unwrap(
        api.GET('/api/v1/project/{project}/plans', { params: { path, query: { per_page: 50, cursor } } }),
      ),
    [project.id],
  );
  const [error, setError] = useState<ApiFailure | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [editing, setEditing] = useState<Plan | null>(null);
  const form = useForm<PlanValues>(NEW_PLAN);
  const add = async (v: PlanValues) => {
    setDone(null);
    const plan = await unwrap(
      api.POST('/api/v1/project/{project}/plans', { params: { path }, body: planBody(v) }),
    );
    form.setValues(NEW_PLAN);
    setDone(`Plan ${plan.code} added.`);
    list.reload();
  };
  return (
    <section aria-labelledby="plans-h">
      <h2 id="plans-h">Plans</h2>
      <ErrorMessage error={list.error ?? error} />
      {done ? <Notice>{done}</Notice> : null}
      <ListTable
        list={list}
        what="plans"
        empty="No plan yet."
        caption={<>Plans of {project.name}</>}
        columns={['Code', 'Name', 'Entitlements', 'Max domains', 'Max checks per day']}
        actions={access.canWrite}
        row={(p) => (
          <tr key={p.id}>
            <th scope="row">{p.code}</th>
            <td>{p.name}</td>
            <td>{entitlementsText(p.entitlements)}</td>
            <td>{show(p.max_domains)}</td>
            <td>{show(p.max_usage_per_day)}</td>
            {access.canWrite ? (
              <td class="row-actions">
                <button type="button" onClick={() => setEditing(p)}>
                  Edit<Hidden> {p.code}</Hidden>
                </button>{' '}
                <ConfirmButton
                  label="Delete"
                  object={p.code}
                  question={`Delete the plan ${p.code}?`}
                  confirmLabel="Yes, delete"
                  danger
                  onError={setError}
                  onConfirm={async () => {
                    await unwrap(
                      api.DELETE('/api/v1/project/{project}/plans/{plan}', {
                        params: { path: { ...path, plan: p.id } },
                      }),
                    );
                    if (editing?.id === p.id) setEditing(null);
                    list.reload();
                  }}
                />
              </td>
            ) : null}
          </tr>
        )}
      />
      {access.canWrite && editing ? (
        <EditPlan
          key={editing.id}
          project={project.id}
          plan={editing}
          onDone={(message) => {
            setEditing(null);
            setDone(message);
            list.reload();
          }}
          onCancel={() => setEditing(null)}
        />
      ) : null}
      {access.canWrite ? (
        <FormBox form={form} title="Add a plan" submitLabel="Add plan" onSubmit={add}>
          <PlanFields form={form} />
        </FormBox>
      ) : null}
    </section>
  );
}

function EditPlan(props: {
  project: number;
  plan: Plan;
  onDone: (message: string) => void;
  onCancel: () => void;
}) {
  const p = props.plan;
  const form = useForm<PlanValues>({
    code: p.code,
    name: p.name,
    entitlements: formatEntitlements(p.entitlements),
    max_domains: limitText(p.max_domains),
    max_subdomains_per_domain: limitText(p.max_subdomains_per_domain),
    max_usage_per_day: limitText(p.max_usage_per_day),
  });
  const save = async (v: PlanValues) => {
    const saved = await unwrap(
      api.PATCH('/api/v1/project/{project}/plans/{plan}', {
        params: { path: { project: props.project, plan: p.id } },
        body: planBody(v),
      }),
    );
    props.onDone(`Plan ${saved.code} saved.`);
  };
  return (
    <EditBox
      form={form}
      title={`Edit plan ${p.code}`}
      submitLabel="Save plan"
      onSubmit={save}
      onCancel={props.onCancel}
    >
      <PlanFields form={form} />
    </EditBox>
  );
}
