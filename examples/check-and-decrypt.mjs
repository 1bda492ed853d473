// Checks payment, then verifies and decrypts every paid-only injectable (Node >= 20). See README.md.
import { createClient, decrypt, decryptFileName, decryptText, verify } from '../sdk/dist/index.js';

const {
  LICENSEGATE_URL,
  LICENSE_KEY,
  SERVICE_DOMAIN,
  INJECTABLE_SECRET: secret,
  PROJECT_ID,
  PUBLIC_KEY,
} = process.env;
try {
  const client = createClient({ baseUrl: LICENSEGATE_URL, licenseKey: LICENSE_KEY, domain: SERVICE_DOMAIN });
  // With a domain: that domain's payment; without one: the project's.
  const result = await client.hasPaid({ includeInjectables: true, checkProject: !SERVICE_DOMAIN });
  if (!result.hasPaid)
    throw new Error(`Not paid. Send the user to ${result.redirectUrl ?? '(no redirect URL set)'}`);
  // has-paid items carry no signature; withSignatures() takes them from the injectable stream.
  for (const item of await client.withSignatures(result.injectables)) {
    if (!(await verify(item, PUBLIC_KEY, PROJECT_ID)))
      throw new Error(`Signature check failed for ${item.slug}`);
    const file = await decryptFileName(item, secret);
    const body = file
      ? `(file ${file}, ${(await decrypt(item, secret)).length} bytes)`
      : await decryptText(item, secret);
    console.log(
      `--- ${item.slug} [${item.type}/${item.mode}${item.target_path ? ` -> ${item.target_path}` : ''}]\n${body}`,
    );
  }
  console.log(`OK: paid; ${result.injectables.length} injectable(s) verified and decrypted.`);
} catch (err) {
  const detail = [
    err.status !== undefined && `HTTP ${err.status}`,
    err.redirectUrl && `redirect: ${err.redirectUrl}`,
    err.retryAfter && `retry after ${err.retryAfter}s`,
  ];
  console.error(
    `licensegate: ${err.message}${detail.some(Boolean) ? ` (${detail.filter(Boolean).join(', ')})` : ''}`,
  );
  process.exitCode = 1;
}
