import { Injectable, PipeTransform } from '@nestjs/common';
import { notFound } from './errors.js';

const MAX_ID = 2_147_483_647;

/** Path ids that are not positive integers name nothing: 404, never 400 (docs/decisions.md#the-envelope-and-errors). */
@Injectable()
export class IdPipe implements PipeTransform<string, number> {
  transform(value: string): number {
    if (!/^[1-9]\d{0,9}$/.test(value) || Number(value) > MAX_ID) throw notFound('Resource');
    return Number(value);
  }
}
