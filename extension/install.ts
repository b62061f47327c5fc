/**
 * Which `slate` binary the main session runs, and which extension build this is.
 *
 * `slate pi install` writes this directory's files plus `install.json` beside them:
 * `{"slate": "/abs/path/to/slate", "extension": "<content hash>", "version": "0.1.0"}`. The
 * binary is `SLATE_BIN` when set (tests and development; an absolute path), else install.json's
 * `slate`. The hash goes into `hello` so that a coordinator built from other extension files
 * refuses the connection and names the fix (`run \`slate pi install\` and restart pi`); it comes
 * from install.json only (a development checkout loaded with `-e` has none, and sends none).
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";

export const SLATE_BIN_ENV = "SLATE_BIN";
export const INSTALL_FILE = "install.json";

/** What the main session needs to start its coordinator. */
export interface Installation {
	/** Absolute path of the `slate` binary. */
	slate: string;
	/** The installed extension's content hash, when install.json gives one. */
	extension?: string;
}

export type InstallationResult = { ok: true; installation: Installation } | { ok: false; reason: string };

/** The directory this extension was loaded from. */
export function extensionDir(): string {
	return dirname(fileURLToPath(import.meta.url));
}

/**
 * Resolve the binary and hash from `env` and `<dir>/install.json`. A present but unreadable or
 * malformed install.json is an error even with `SLATE_BIN` set: a broken installation is named,
 * never guessed around.
 */
export function findInstallation(env: Record<string, string | undefined>, dir: string): InstallationResult {
	const file = join(dir, INSTALL_FILE);
	let manifest: { slate?: unknown; extension?: unknown } | undefined;
	let text: string | undefined;
	try {
		text = readFileSync(file, "utf8");
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
			return { ok: false, reason: `${file} cannot be read: ${(error as Error).message}` };
		}
	}
	if (text !== undefined) {
		try {
			const parsed: unknown = JSON.parse(text);
			if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
				return { ok: false, reason: `${file}: must be a JSON object` };
			}
			manifest = parsed as { slate?: unknown; extension?: unknown };
		} catch (error) {
			return { ok: false, reason: `${file}: not JSON (${(error as Error).message})` };
		}
		if (manifest.extension !== undefined && typeof manifest.extension !== "string") {
			return { ok: false, reason: `${file}: extension must be a string (the content hash)` };
		}
	}
	const extension = manifest?.extension as string | undefined;
	const fromEnv = env[SLATE_BIN_ENV];
	if (fromEnv !== undefined && fromEnv !== "") {
		if (!isAbsolute(fromEnv)) {
			return { ok: false, reason: `${SLATE_BIN_ENV}=${JSON.stringify(fromEnv)} is not an absolute path` };
		}
		return { ok: true, installation: withHash({ slate: fromEnv }, extension) };
	}
	if (manifest === undefined) {
		return {
			ok: false,
			reason: `no ${file} and no ${SLATE_BIN_ENV}: run \`slate pi install\` (or set ${SLATE_BIN_ENV} to the slate binary)`,
		};
	}
	if (typeof manifest.slate !== "string" || !isAbsolute(manifest.slate)) {
		return { ok: false, reason: `${file}: slate must be the absolute path of the slate binary` };
	}
	return { ok: true, installation: withHash({ slate: manifest.slate }, extension) };
}

function withHash(installation: Installation, extension: string | undefined): Installation {
	return extension === undefined ? installation : { ...installation, extension };
}
