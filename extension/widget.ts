/**
 * The fleet widget above pi's editor: the rows of `slate watch`, rendered by Slate at pi's
 * current width on every frame.
 *
 * `slate watch --parent P --lines` runs for the session. It writes one JSON line
 * `{"width": N, "lines": [...]}` each time the rows change (SGR-coloured, sanitized, each line
 * at most N display columns; `[]` while the registry is empty), and answers each stdin line
 * `{"width": N, "rows": R}` at once with a document of that size. The widget is a pi component
 * (`ctx.ui.setWidget(key, factory)`): its `render(width)` runs every frame with the width pi
 * gives widgets (the whole terminal width; pi adds no padding around a component), and keeps
 * one column free on each side as pi's own text widgets do, so the rows Slate draws are
 * `width - 2` columns. When that differs from the last document's width, the new width is
 * asked for once and, until the answer arrives (a few milliseconds), the previous rows are
 * shown cut to fit with pi's own `truncateToWidth` (or not at all, without it). The extension
 * renders nothing itself: no wording, colour or layout of rows lives here.
 *
 * No rows removes the widget. A coordinator that died (it stopped answering without shutting
 * down) gets a last document with a `coordinator` member, whose rows say so and show the last
 * known states: that widget stays after `slate watch` exits (at that document's width).
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";

export const WIDGET_KEY = "slate-fleet";
/** A document longer than this is not Slate's (at most 12 rows of at most 1000 columns). */
const LINE_MAX = 256 * 1024;
/** Columns kept free on each side of the rows (as pi's string widgets do). */
export const PAD = 1;
/** The widest rows Slate draws (`slate watch --lines` refuses more). */
export const MAX_WIDTH = 1000;

/** One document of `slate watch --lines`. */
export interface Rows {
	width: number;
	lines: string[];
	/** Set on the last document when the coordinator is gone. */
	final: boolean;
}

/** What pi gives the widget factory (a subset of pi-tui's `TUI`). */
export interface Host {
	requestRender(): void;
	terminal: { rows: number };
}

/** A pi component (pi-tui's `Component`, as the widget uses it). */
export interface WidgetComponent {
	render(width: number): readonly string[];
	invalidate(): void;
	dispose?(): void;
}

export type WidgetFactory = (tui: Host) => WidgetComponent;

/** `ctx.ui.setWidget(key, factory | undefined)`. */
export type SetWidget = (key: string, factory: WidgetFactory | undefined) => void;

/** pi-tui's `truncateToWidth(line, width)`: cut a styled line to `width` display columns. */
export type Truncate = (line: string, width: number) => string;

/** `slate watch`'s argv for this session. */
export function watchArgs(parentId: string): string[] {
	return ["watch", "--parent", parentId, "--lines"];
}

/** The width Slate draws the rows at inside pi's `width` (at least 1, at most {@link MAX_WIDTH}). */
export function rowsWidth(width: number): number {
	return Math.min(MAX_WIDTH, Math.max(1, Math.floor(width) - 2 * PAD));
}

/** The stdin line asking for rows `width` columns wide in a terminal `rows` lines high. */
export function sizeRequest(width: number, rows: number | undefined): string {
	const request: { width: number; rows?: number } = { width };
	if (rows !== undefined && Number.isInteger(rows) && rows > 0) {
		request.rows = Math.min(rows, 65535);
	}
	return `${JSON.stringify(request)}\n`;
}

/** One `--lines` document, or `undefined` if it is not one. */
export function parseRows(line: string): Rows | undefined {
	let value: unknown;
	try {
		value = JSON.parse(line);
	} catch {
		return undefined;
	}
	if (typeof value !== "object" || value === null) {
		return undefined;
	}
	const doc = value as { width?: unknown; lines?: unknown; coordinator?: unknown };
	if (typeof doc.width !== "number" || !Number.isInteger(doc.width) || doc.width < 1 || !Array.isArray(doc.lines)) {
		return undefined;
	}
	if (!doc.lines.every((l) => typeof l === "string")) {
		return undefined;
	}
	return {
		width: doc.width,
		lines: doc.lines as string[],
		final: typeof doc.coordinator === "object" && doc.coordinator !== null,
	};
}

/**
 * The lines to draw for pi's `width` from the newest document: the rows behind a pad when they
 * were drawn for this width (or a narrower one), cut with `truncate` when they are wider, and
 * none when they are wider and nothing can cut them.
 */
export function frame(rows: Rows, width: number, truncate: Truncate | undefined): string[] {
	const inner = rowsWidth(width);
	const pad = " ".repeat(PAD);
	if (rows.width <= inner) {
		return rows.lines.map((l) => pad + l);
	}
	if (truncate === undefined) {
		return [];
	}
	return rows.lines.map((l) => pad + truncate(l, inner));
}

/** A running `slate watch --lines` feeding the widget. */
export class FleetWidget {
	private readonly child: ChildProcess;
	private readonly set: SetWidget;
	private readonly truncate: () => Truncate | undefined;
	private stopped = false;
	/** The newest document with rows (undefined: no widget). */
	private rows: Rows | undefined;
	/** The width last asked for (a request is sent once per new width). */
	private asked: number | undefined;
	/** pi's TUI, once pi created the component. */
	private host: Host | undefined;
	/** The last frame, returned again while nothing changed (pi reuses an unchanged array). */
	private cache: { rows: Rows; width: number; truncated: boolean; lines: string[] } | undefined;

	constructor(slate: string, parentId: string, cwd: string, set: SetWidget, truncate: () => Truncate | undefined) {
		this.set = set;
		this.truncate = truncate;
		this.child = spawn(slate, watchArgs(parentId), { cwd, stdio: ["pipe", "pipe", "ignore"] });
		this.child.on("error", () => {}); // no widget then; the commands still say why
		this.child.stdin?.on("error", () => {}); // it exited; `close` follows
		this.child.unref();
		const stdout = this.child.stdout;
		(stdout as unknown as Socket | null)?.unref?.();
		(this.child.stdin as unknown as Socket | null)?.unref?.();
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
			if (this.rows?.final !== true) {
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

	/** The component pi draws: one per `setWidget`, all reading this widget's newest rows. */
	private readonly factory: WidgetFactory = (host) => {
		this.host = host;
		return {
			render: (width) => this.render(width),
			invalidate: () => {
				this.cache = undefined;
			},
		};
	};

	/** One frame at pi's `width`: ask for that width once when the rows were drawn for another. */
	render(width: number): readonly string[] {
		const rows = this.rows;
		if (rows === undefined) {
			return [];
		}
		const inner = rowsWidth(width);
		if (rows.width !== inner && this.asked !== inner && !rows.final) {
			this.asked = inner;
			this.request(inner);
		}
		const truncate = rows.width > inner ? this.truncate() : undefined;
		const c = this.cache;
		if (c !== undefined && c.rows === rows && c.width === width && c.truncated === (truncate !== undefined)) {
			return c.lines;
		}
		const lines = frame(rows, width, truncate);
		this.cache = { rows, width, truncated: truncate !== undefined, lines };
		return lines;
	}

	private request(width: number): void {
		const stdin = this.child.stdin;
		if (stdin === null || stdin.destroyed || !stdin.writable) {
			return;
		}
		stdin.write(sizeRequest(width, this.host?.terminal.rows));
	}

	private show(line: string): void {
		if (this.stopped) {
			return;
		}
		const rows = parseRows(line);
		if (rows === undefined) {
			return;
		}
		if (rows.lines.length === 0) {
			const had = this.rows !== undefined;
			this.rows = undefined;
			this.cache = undefined;
			if (had) {
				this.set(WIDGET_KEY, undefined);
			}
			return;
		}
		const had = this.rows !== undefined;
		this.rows = rows;
		if (rows.width === this.asked) {
			this.asked = undefined;
		}
		if (had) {
			this.host?.requestRender();
		} else {
			this.set(WIDGET_KEY, this.factory);
		}
	}

	private clear(): void {
		if (!this.stopped) {
			this.stopped = true;
			this.child.stdin?.destroy();
			if (this.rows !== undefined) {
				this.rows = undefined;
				this.set(WIDGET_KEY, undefined);
			}
		}
	}
}
