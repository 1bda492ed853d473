// The floor the runtime check is measured against (npm run bench, the bare pair): a node:http server
// that answers every request with the bytes given as JSON in argv[2] ({status, headers, body}), after
// reading the request body, as any server must. Nothing else: what a Node server pays per call.
import { createServer } from 'node:http';

const { status, headers, body } = JSON.parse(process.argv[2]);
const port = Number(process.argv[3]);
createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(status, headers);
    res.end(body);
  });
}).listen(port, '127.0.0.1', () => process.send?.('ready'));
