/**
 * The content hash of the extension files beside this one, computed as Slate names the
 * directory it writes them to (`hash_files` in `src/worker/pi/extension.rs`): SHA-256 over every
 * `.ts` file of the directory in name order, each as its name's length (64-bit little-endian),
 * its name, its content's length and its content; the first 16 bytes, in hex.
 *
 * A worker presents it at `hello` (`client.extension`), so the coordinator refuses a worker whose
 * files on disk are not the ones it shipped (`extension-mismatch`), whether the worker started
 * cold or was pre-started before the files changed. It is read when the worker is set up (each
 * binding of a pre-started process reads it again), never cached.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The hash of the `.ts` files in `dir`, or of this file's own directory. */
export function ownHash(dir: string = dirname(fileURLToPath(import.meta.url))): string {
	const hash = createHash("sha256");
	const names = readdirSync(dir, { withFileTypes: true })
		.filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
		.map((entry) => entry.name)
		.sort();
	for (const name of names) {
		const nameBytes = Buffer.from(name, "utf8");
		const content = readFileSync(join(dir, name));
		hash.update(length(nameBytes.length));
		hash.update(nameBytes);
		hash.update(length(content.length));
		hash.update(content);
	}
	return hash.digest().subarray(0, 16).toString("hex");
}

function length(n: number): Buffer {
	const out = Buffer.alloc(8);
	out.writeBigUInt64LE(BigInt(n));
	return out;
}
