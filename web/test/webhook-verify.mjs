// Verifies one webhook delivery with the Standard Webhooks reference
// verifier (npm standardwebhooks), independently of the Go code. Reads JSON
// on stdin {"secret","headers","body"} (body as the exact text received)
// and prints the verified payload on stdout; exits 1 when it does not verify.
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { secret, headers, body } = JSON.parse(input);
try {
  const payload = new Webhook(secret).verify(body, headers);
  process.stdout.write(JSON.stringify(payload));
} catch (err) {
  process.stderr.write(`not verified: ${err.message}\n`);
  process.exit(1);
}
