import { freshnessSuite } from '../utils/freshness.js';

freshnessSuite('read-after-write freshness without Redis', () => ({}));
