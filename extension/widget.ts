/**
 * The fleet widget above pi's editor: the rows of `slate watch`, rendered by Slate.
 *
 * `slate watch --parent P --lines [--width N]` writes one JSON line `{"lines": [...]}` each time
 * the rows change (plain, sanitized text; `[]` while the registry is empty) and exits when the
 * coordinator goes away. Each line becomes `ctx.ui.setWidget("slate-fleet", lines)`, no rows
 * removing the widget. The extension renders nothing itself. A coordinator that died (it stopped
 * answering without shutting down) gets a last document with a `coordinator` member, whose rows
 * say so and show the last known states: that widget stays after `slate watch` exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";

export const WIDGET_KEY = "slate-fleet";
/** A rows line longer than this is not Slate's (at most 12 rows of a terminal's width). */
const LINE_MAX = 256 * 1024;

export type SetWidget = (key: string, lines: string[] | undefined) => void;

/** `slate watch`'s argv for this session. */
export function watchArgs(parentId: string, width: number | undefined): string[] {
	const args = ["watch", "--parent", parentId, "--lines"];
	if (width !== undefined && Number.isInteger(width) && width > 0) {
		args.push("--width", String(width));
	}
	return args;
}

/** Whether a `--lines` line is the last word on a coordinator that is gone (`coordinator` set). */
export function isFinal(line: string): boolean {
	try {
		const value: unknown = JSON.parse(line);
		return typeof value === "object" && value !== null && typeof (value as { coordinator?: unknown }).coordinator === "object";
	} catch {
		return false;
	}
}

/** The rows of one `--lines` line, or `undefined` if it is not one. */
export function parseRows(line: string): string[] | undefined {
	let value: unknown;
	try {
		value = JSON.parse(line);
	} catch {
		return undefined;
	}
	if (typeof value !== "object" || value === null || !Array.isArray((value as { lines?: unknown }).lines)) {
		return undefined;
	}
	const lines = (value as { lines: unknown[] }).lines;
	return lines.every((l) => typeof l === "string") ? (lines as string[]) : undefined;
}

/** A running `slate watch --lines` feeding the widget. */
export class FleetWidget {
	private readonly child: ChildProcess;
	private readonly set: SetWidget;
	private stopped = false;
	/** The last document said the coordinator is gone: its rows stay when `slate watch` exits. */
	private final = false;

	constructor(slate: string, parentId: string, cwd: string, set: SetWidget, width?: number) {
		this.set = set;
		this.child = spawn(slate, watchArgs(parentId, width), { cwd, stdio: ["ignore", "pipe", "ignore"] });
		this.child.on("error", () => {}); // no widget then; the commands still say why
		this.child.unref();
		const stdout = this.child.stdout;
		(stdout as unknown as Socket | null)?.unref?.();
		let partial = "";
		stdout?.setEncoding("utf8");
		stdout?.on("data", (chunk: string) => {
			partial += chunk;
			let newline = partial.indexOf("\n");
			while (newline !== -1) {
				this.show(partial.slice(0, newline));
				partial = partial.slice(newline + 1);
				newline = partial.indexOf("\n");
			}
			if (partial.length > LINE_MAX) {
				this.stop(); // not Slate's output
			}
		});
		this.child.on("close", () => {
			if (!this.final) {
				this.clear();
			}
		});
	}

	/** Stop following and remove the widget. Idempotent. */
	stop(): void {
		if (!this.child.killed && this.child.exitCode === null) {
			this.child.kill("SIGTERM");
		}
		this.clear();
	}

	private show(line: string): void {
		if (this.stopped) {
			return;
		}
		const rows = parseRows(line);
		if (rows !== undefined) {
			this.final = isFinal(line);
			this.set(WIDGET_KEY, rows.length > 0 ? rows : undefined);
		}
	}

	private clear(): void {
		if (!this.stopped) {
			this.stopped = true;
			this.set(WIDGET_KEY, undefined);
		}
	}
}
