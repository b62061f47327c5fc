/**
 * Running the `slate` CLI from the main session (slash commands, handoff, the widget): the
 * CLI's own text through the CLI's own code, never a re-rendering here.
 */
import { execFile } from "node:child_process";

/** What one run printed, and how it ended. */
export interface CliRun {
	/** The exit code; `null` when the process could not run or was killed. */
	code: number | null;
	stdout: string;
	stderr: string;
	/** Why the process could not run, if it could not. */
	error?: string;
}

/** Large enough for any status table or profile listing Slate prints. */
const MAX_BUFFER = 16 * 1024 * 1024;
const TIMEOUT_MS = 60_000;

export type RunCli = (args: string[], cwd: string) => Promise<CliRun>;

/** `execFile(slate, args, {cwd})`; never rejects. */
export function cliRunner(slate: string): RunCli {
	return (args, cwd) =>
		new Promise((resolve) => {
			execFile(
				slate,
				args,
				{ cwd, maxBuffer: MAX_BUFFER, timeout: TIMEOUT_MS, encoding: "utf8" },
				(error, stdout, stderr) => {
					if (error === null) {
						resolve({ code: 0, stdout, stderr });
						return;
					}
					const code = typeof error.code === "number" ? error.code : null;
					const run: CliRun = { code, stdout, stderr };
					if (code === null) {
						run.error = `${slate} ${args[0] ?? ""}: ${error.message}`;
					}
					resolve(run);
				},
			);
		});
}

/** The text to show for a run: its stdout, then its stderr (or why it did not run). */
export function cliText(run: CliRun): string {
	const parts = [run.stdout.trimEnd(), run.stderr.trimEnd(), run.error ?? ""].filter((p) => p !== "");
	return parts.length === 0 ? `(no output; exit ${run.code ?? "?"})` : parts.join("\n");
}

/** The CLI prints `error: …` on stderr and pi shows an error as `Error: …`: say it once. */
export function withoutErrorPrefix(text: string): string {
	return text.replace(/^error: /, "");
}
