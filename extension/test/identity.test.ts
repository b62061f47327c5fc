/**
 * identity.ts in a child process whose descriptor 3 is what a test gives it: the module reads
 * it at load, so each case is a fresh process.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";

const IDENTITY = new URL("../identity.ts", import.meta.url).href;

/** What the child reports after importing identity.ts. */
interface Report {
	identity: { ok: boolean; identity?: { capability: string; socket: string }; reason?: string } | null;
	envHasFd: boolean;
	envSocket: string | undefined;
	fd3Open: boolean;
}

const CHILD = `
import { fstatSync } from "node:fs";
const { identity } = await import(${JSON.stringify(IDENTITY)});
let fd3Open = true;
try { fstatSync(3); } catch { fd3Open = false; }
process.stdout.write(JSON.stringify({
	identity,
	envHasFd: "SLATE_CAPABILITY_FD" in process.env,
	envSocket: process.env.SLATE_SOCKET,
	fd3Open,
}));
`;

/** Run the child with `env` added; `fd3` is written to its descriptor 3 (then EOF), or none. */
function run(env: Record<string, string>, fd3: string | Buffer | null): Promise<Report> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, ["--input-type=module", "-e", CHILD], {
			env: { PATH: process.env.PATH ?? "", ...env },
			stdio: ["ignore", "pipe", "inherit", fd3 === null ? "ignore" : "pipe"],
		});
		let out = "";
		child.stdout?.on("data", (c) => {
			out += c;
		});
		const pipe = child.stdio[3];
		if (fd3 !== null && pipe !== null && pipe !== undefined && "end" in pipe) {
			pipe.on("error", () => {}); // the child may close it before reading everything
			pipe.end(fd3);
		}
		child.on("error", reject);
		child.on("close", (code) => {
			try {
				assert.equal(code, 0);
				resolve(JSON.parse(out) as Report);
			} catch (error) {
				reject(error);
			}
		});
	});
}

const CAP = "0123456789abcdef".repeat(4);
const SOCKET = "/run/slate/test.sock";

test("reads the capability from fd 3 to EOF, closes fd 3 and deletes SLATE_CAPABILITY_FD", async () => {
	const r = await run({ SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: SOCKET }, CAP);
	assert.deepEqual(r.identity, { ok: true, identity: { capability: CAP, socket: SOCKET } });
	assert.equal(r.envHasFd, false);
	assert.equal(r.fd3Open, false);
	assert.equal(r.envSocket, SOCKET, "SLATE_SOCKET stays for slate in the worker's bash");
});

test("a trailing newline is not part of the capability", async () => {
	const r = await run({ SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: SOCKET }, `${CAP}\n`);
	assert.equal(r.identity?.identity?.capability, CAP);
});

test("a capability arriving in pieces is read whole", async () => {
	// One write per half: readSync must loop until EOF.
	const r = await new Promise<Report>((resolve, reject) => {
		const child = spawn(process.execPath, ["--input-type=module", "-e", CHILD], {
			env: { PATH: process.env.PATH ?? "", SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: SOCKET },
			stdio: ["ignore", "pipe", "inherit", "pipe"],
		});
		let out = "";
		child.stdout?.on("data", (c) => {
			out += c;
		});
		const pipe = child.stdio[3] as NodeJS.WritableStream;
		pipe.write(CAP.slice(0, 20));
		setTimeout(() => pipe.end(CAP.slice(20)), 100);
		child.on("error", reject);
		child.on("close", () => resolve(JSON.parse(out) as Report));
	});
	assert.equal(r.identity?.identity?.capability, CAP);
});

test("no SLATE_CAPABILITY_FD: not a worker (the main-session role), descriptor 3 untouched", async () => {
	const r = await run({ SLATE_SOCKET: SOCKET }, null);
	assert.equal(r.identity, null);
	assert.equal(r.fd3Open, true);
});

test("takeIdentity without SLATE_CAPABILITY_FD names the variable", async () => {
	const { takeIdentity } = await import("../identity.ts");
	assert.deepEqual(takeIdentity({ SLATE_SOCKET: SOCKET }), {
		ok: false,
		reason: "SLATE_CAPABILITY_FD is not set, so this pi has no worker capability",
	});
});

test("an empty pipe: no identity", async () => {
	const r = await run({ SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: SOCKET }, "");
	assert.equal(r.identity?.ok, false);
	assert.match(r.identity?.reason ?? "", /held no capability/);
	assert.equal(r.fd3Open, false);
});

test("an oversized pipe: no identity, fd 3 still closed", async () => {
	const r = await run({ SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: SOCKET }, Buffer.alloc(64 * 1024, 0x61));
	assert.equal(r.identity?.ok, false);
	assert.match(r.identity?.reason ?? "", /more than 1024 bytes/);
	assert.equal(r.fd3Open, false);
});

test("fd 3 not inherited: no identity, and Node's own descriptor 3 is left open", async () => {
	// Node then holds fd 3 itself (its epoll descriptor); closing it would crash the child.
	const r = await run({ SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: SOCKET }, null);
	assert.equal(r.identity?.ok, false);
	assert.match(r.identity?.reason ?? "", /descriptor 3 is not a pipe/);
	assert.equal(r.envHasFd, false);
	assert.equal(r.fd3Open, true);
});

test("a descriptor number that is not open: no identity", async () => {
	const r = await run({ SLATE_CAPABILITY_FD: "999", SLATE_SOCKET: SOCKET }, null);
	assert.equal(r.identity?.ok, false);
	assert.match(r.identity?.reason ?? "", /descriptor 999 is not open/);
});

test("stdin, stdout and stderr are never taken for the capability", async () => {
	const r = await run({ SLATE_CAPABILITY_FD: "0", SLATE_SOCKET: SOCKET }, null);
	assert.equal(r.identity?.ok, false);
	assert.match(r.identity?.reason ?? "", /not a descriptor number of 3 or more/);
});

test("no SLATE_SOCKET, or a relative one: no identity (and fd 3 is consumed anyway)", async () => {
	const none = await run({ SLATE_CAPABILITY_FD: "3" }, CAP);
	assert.equal(none.identity?.ok, false);
	assert.match(none.identity?.reason ?? "", /SLATE_SOCKET is not set/);
	assert.equal(none.fd3Open, false);
	const relative = await run({ SLATE_CAPABILITY_FD: "3", SLATE_SOCKET: "c.sock" }, CAP);
	assert.match(relative.identity?.reason ?? "", /not an absolute path/);
});
