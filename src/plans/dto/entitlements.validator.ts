import { applyDecorators } from '@nestjs/common';
import { IsOptional, ValidateBy } from 'class-validator';
import { entitlementsProblem } from '../entitlements.js';

/** An `entitlements` object (entitlements.ts); the message names the key at fault. `nullable`: null is taken (no overrides). */
export const EntitlementsField = (nullable: boolean) =>
  applyDecorators(
    ...(nullable ? [IsOptional()] : []),
    ValidateBy({
      name: 'isEntitlements',
      validator: {
        validate: (value: unknown) =>
          (value === undefined && !nullable) || entitlementsProblem(value) === null,
        defaultMessage: (args) => entitlementsProblem(args?.value) ?? 'The entitlements field is invalid.',
      },
    }),
  );
