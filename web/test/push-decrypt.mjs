// Decrypts one Web Push body with the npm package http_ece, independently of
// the Go code: a second check of what the server sends. Reads JSON on stdin
// {"body","private_key","auth"} (base64url: the aes128gcm body, the
// subscription's raw P-256 private key, its auth secret) and prints the
// plaintext on stdout.
import { createECDH } from "node:crypto";
import { createRequire } from "node:module";

const ece = createRequire(import.meta.url)("http_ece");

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { body, private_key: privateKey, auth } = JSON.parse(input);

const key = createECDH("prime256v1");
key.setPrivateKey(Buffer.from(privateKey, "base64url"));
const plain = ece.decrypt(Buffer.from(body, "base64url"), { version: "aes128gcm", privateKey: key, authSecret: auth });
process.stdout.write(plain);
