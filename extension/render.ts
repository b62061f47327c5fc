/**
 * How Slate's tools look in pi: layout only. Every word comes from the coordinator: each child
 * row's `line` (status mark, role, 8-character handle, elapsed, tokens, cost, then the latest
 * activity or, once ended, the result headline), the artifact paths (relative to the project),
 * and the model-facing `text`. Here they are coloured by status and fitted to pi's width (every
 * line at most `width` columns, never wrapped), and the full text is shown on pi's expand.
 *
 * A running call shows one live line per child (pi's partial results, from `toolUpdate`); a
 * background call's rows keep updating after its answer (`live`), and settle when its outcome
 * arrives.
 */
import type { Theme, ToolRenderResultOptions } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";

import type { ToolRow, ToolSpec } from "./protocol.ts";

/** A tool result's `details`, as the coordinator answered them (plus which answer it is). */
export type ToolDetails = {
	kind: "running" | "answer" | "outcome";
	call?: number;
	rows?: ToolRow[];
	error?: { code: string; message: string };
} & Record<string, unknown>;

/** Rows of background calls that changed after their answer, by pi's tool call id. */
const live = new Map<string, { rows: ToolRow[]; settled: boolean }>();
/** How to ask pi to draw a tool row again, by tool call id (from its latest render). */
const redraw = new Map<string, () => void>();

/** Newer rows for call `toolCallId` (a background call's updates and its outcome). */
export function updateLive(toolCallId: string, rows: ToolRow[], settled: boolean): void {
	live.set(toolCallId, { rows, settled });
	redraw.get(toolCallId)?.();
	if (settled) {
		redraw.delete(toolCallId);
	}
}

/**
 * pi's own width fitting (`truncateToWidth`: ANSI, wide characters), loaded from pi's copy of
 * pi-tui when this runs inside pi. Outside pi (the extension's node tests, where pi's packages
 * are not resolvable) a plain cut by code points stands in; escapes then count as columns, so
 * it cuts early and never too late for the ASCII those tests draw.
 */
let truncateToWidth = (line: string, width: number): string => {
	const chars = [...line];
	return chars.length <= width ? line : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
};
import("@earendil-works/pi-tui").then(
	(tui) => {
		truncateToWidth = (line, width) => tui.truncateToWidth(line, width);
	},
	() => {},
);

/** Lines fitted to the width pi gives, never wrapped. */
class Lines implements Component {
	private lines: string[];

	constructor(lines: string[]) {
		this.lines = lines;
	}

	set(lines: string[]): void {
		this.lines = lines;
	}

	render(width: number): string[] {
		return this.lines.map((line) => truncateToWidth(line, Math.max(1, width)));
	}

	invalidate(): void {}
}

type Color = Parameters<Theme["fg"]>[0];

function statusColor(status: string): Color {
	switch (status) {
		case "settled":
			return "success";
		case "failed":
			return "error";
		case "cancelled":
		case "paused":
		case "pausing":
			return "warning";
		case "queued":
			return "dim";
		default:
			return "accent";
	}
}

/** One child: its line, the mark coloured by status; artifacts below once ended. */
export function rowLines(row: ToolRow, theme: Theme, withArtifacts: boolean): string[] {
	const [mark, ...rest] = [...row.line];
	const out = [`${theme.fg(statusColor(row.status), mark ?? "")}${rest.join("")}`];
	if (withArtifacts) {
		for (const path of row.artifacts ?? []) {
			out.push(theme.fg("dim", `  → ${path}`));
		}
	}
	return out;
}

function str(value: unknown): string | undefined {
	return typeof value === "string" && value !== "" ? value : undefined;
}

/** The call line: the tool's label and what was asked, in a few words. */
export function callSummary(tool: string, args: Record<string, unknown>): string {
	const parts: string[] = [];
	if (Array.isArray(args.tasks)) {
		parts.push(`${args.tasks.length} tasks`);
	}
	for (const key of ["action", "profile", "agent"]) {
		const value = str(args[key]);
		if (value !== undefined) {
			parts.push(value);
		}
	}
	const target = str(args.target) ?? str(args.id);
	if (target !== undefined) {
		parts.push(target.slice(0, 8));
	}
	if (args.background === true || (tool === "subagent" && args.async !== false && args.action === undefined)) {
		parts.push("background");
	}
	const text = str(args.assignment) ?? str(args.task) ?? str(args.text) ?? str(args.message);
	if (text !== undefined) {
		parts.push(JSON.stringify(text.split("\n")[0]));
	}
	return parts.join(" ");
}

export function renderCall(
	spec: ToolSpec,
	args: Record<string, unknown>,
	theme: Theme,
	context: { lastComponent?: Component | undefined },
): Component {
	const line = `${theme.fg("toolTitle", theme.bold(spec.label))} ${theme.fg("muted", callSummary(spec.name, args ?? {}))}`;
	const component = context.lastComponent instanceof Lines ? context.lastComponent : new Lines([]);
	component.set([line]);
	return component;
}

/** Lines of model text: all when expanded, else the first `keep` and a count. */
function textLines(text: string, expanded: boolean, keep: number, theme: Theme): string[] {
	const lines = text.split("\n");
	if (expanded || lines.length <= keep) {
		return lines.map((l) => theme.fg("toolOutput", l));
	}
	return [
		...lines.slice(0, keep).map((l) => theme.fg("toolOutput", l)),
		theme.fg("dim", `… ${lines.length - keep} more lines`),
	];
}

export function renderResult(
	_spec: ToolSpec,
	result: { content: { type: string; text?: string }[]; details?: ToolDetails | undefined },
	options: ToolRenderResultOptions,
	theme: Theme,
	context: {
		toolCallId: string;
		lastComponent?: Component | undefined;
		invalidate: () => void;
		isError: boolean;
		/** pi's key hint for expanding a tool row. */
		expandHint: string;
	},
): Component {
	const component = context.lastComponent instanceof Lines ? context.lastComponent : new Lines([]);
	const text = result.content
		.map((c) => c.text ?? "")
		.join("\n")
		.trimEnd();
	const details = result.details;
	const later = live.get(context.toolCallId);
	if (details?.kind === "answer" && details.call !== undefined && later?.settled !== true) {
		redraw.set(context.toolCallId, context.invalidate);
	}
	const rows = later?.rows ?? details?.rows;
	const lines: string[] = [];
	if (context.isError || details?.error !== undefined) {
		lines.push(...textLines(text, options.expanded, 6, theme).map((l) => theme.fg("error", l)));
	} else if (rows !== undefined && rows.length > 0) {
		const running = options.isPartial || details?.kind === "running";
		for (const row of rows) {
			lines.push(...rowLines(row, theme, !running));
		}
		if (details?.kind === "answer" && details.call !== undefined && later?.settled !== true && !running) {
			const pending = rows.some((r) => !["settled", "failed", "cancelled"].includes(r.status));
			if (pending) {
				lines.push(theme.fg("dim", `call ${details.call}: the outcome follows as a message`));
			}
		}
		if (options.expanded && !running) {
			lines.push("", ...textLines(text, true, 0, theme));
		} else if (!running) {
			lines.push(theme.fg("dim", context.expandHint));
		}
	} else {
		lines.push(...textLines(text, options.expanded, 12, theme));
	}
	component.set(lines);
	return component;
}

/** A background call's outcome message: its settled rows and artifacts; the text on expand. */
export function renderOutcome(
	message: { content: unknown; details?: unknown },
	expanded: boolean,
	theme: Theme,
	expandHint: string,
): Component {
	const details = (message.details ?? {}) as ToolDetails;
	const text = typeof message.content === "string" ? message.content : "";
	const lines = [theme.fg("toolTitle", theme.bold(`Slate · call ${details.call ?? "?"} drained`))];
	for (const row of details.rows ?? []) {
		lines.push(...rowLines(row, theme, true));
	}
	if (expanded) {
		lines.push("", ...textLines(text, true, 0, theme));
	} else {
		lines.push(theme.fg("dim", expandHint));
	}
	return new Lines(lines);
}
