// The floor the management path is measured against (npm run bench, the Nest pair): a stock NestJS
// application on Express, as `nest new` makes it, with one controller that answers GET /api/v1/ with
// the body given as JSON in argv[2] ({status, headers, body}): Nest's router, its pipeline and
// Express's response helpers, without anything of ours. Written without decorator syntax, which
// Node does not run: Reflect.decorate applies the same decorators.
import 'reflect-metadata';
import { Controller, Get, Header, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

const { headers, body } = JSON.parse(process.argv[2]);
const port = Number(process.argv[3]);
const answer = JSON.parse(body);

class RootController {
  root() {
    return answer;
  }
}
// The same headers as the service's answer, but for those Express sets itself.
const extra = Object.entries(headers).filter(
  ([name]) => !['content-type', 'content-length', 'etag', 'x-powered-by'].includes(name),
);
Reflect.decorate(
  [Get(), ...extra.map(([name, value]) => Header(name, value))],
  RootController.prototype,
  'root',
  Object.getOwnPropertyDescriptor(RootController.prototype, 'root'),
);
Reflect.decorate([Controller('api/v1')], RootController);

class AppModule {}
Reflect.decorate([Module({ controllers: [RootController] })], AppModule);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(port, '127.0.0.1');
process.send?.('ready');
