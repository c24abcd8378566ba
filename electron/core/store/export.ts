import fs from "node:fs";
import { writeFileAtomicWith } from "../../../common/fs/atomicFile.js";
import type { FeedbackRecord, JudgeRecord, TurnRecord } from "./records.js";
import { rewardOf, type FeedbackState, type Store } from "./store.js";
import type { ChatMessage } from "../api/chatTypes.js";
import type { Sample } from "../../../models/samples/sample.js";
import { answerEditSample } from "../../../models/samples/answerEdit.js";

/** One line of an export: a turn with everything attached to it. */
export interface ExportedTrajectory extends Omit<TurnRecord, "kind" | "v" | "prefixKey"> {
  nextState: ChatMessage[] | null;
  /** explicit feedback in force */
  feedback: FeedbackState | null;
  /** every feedback change, oldest first */
  feedbackHistory: Array<Omit<FeedbackRecord, "kind" | "v" | "turnId" | "sessionId">>;
  judge: Omit<JudgeRecord, "kind" | "v" | "turnId" | "sessionId"> | null;
  reward: number | null;
  rewardSource: "thumbs" | "judge" | null;
  /** the user's hint, then the judge's hint candidates */
  hints: string[];
  /**
   * The user's rewrite of the answer in force, and the training sample it makes (docs/method.md
   * "Answer edits": the edit's tokens are the target; the pool leaves it out for a held-back turn); null: none.
   */
  answerEdit: { text: string; time: string; sample: Sample | null } | null;
}

export interface ExportSummary {
  turns: number;
  sessions: number;
  bytes: number;
}

/**
 * Writes every live turn (log order) with its next state, feedback, judge votes, reward and
 * hints as JSON Lines. Written to a temp file, fsynced, renamed: the output is whole or absent.
 */
export function exportTrajectories(store: Store, outFile: string): ExportSummary {
  return writeFileAtomicWith(outFile, 0o600, (fd) => {
    const sessions = new Set<string>();
    let turns = 0;
    let bytes = 0;
    for (const e of store.turnEntries()) {
      const { kind: _k, v: _v, prefixKey: _p, ...turn } = store.readTurn(e.turnId);
      const judgeRec = store.readJudge(e.turnId);
      const judge = judgeRec ? (({ kind: _a, v: _b, turnId: _c, sessionId: _d, ...j }) => j)(judgeRec) : null;
      const r = rewardOf(e);
      const edit = store.readAnswerEdit(e.turnId);
      const line: ExportedTrajectory = {
        ...turn,
        nextState: store.readNextState(e.turnId),
        feedback: e.feedback,
        feedbackHistory: store.readFeedbackHistory(e.turnId).map(({ kind: _a, v: _b, turnId: _c, sessionId: _d, ...f }) => f),
        judge,
        reward: r.reward,
        rewardSource: r.source,
        hints: [...(e.feedback?.hint ? [e.feedback.hint] : []), ...(judge?.hints ?? [])],
        answerEdit: edit && { ...edit, sample: answerEditSample(turn, edit.text) },
      };
      const buf = Buffer.from(`${JSON.stringify(line)}\n`, "utf8");
      fs.writeFileSync(fd, buf);
      bytes += buf.length;
      turns++;
      sessions.add(e.sessionId);
    }
    return { turns, sessions: sessions.size, bytes };
  });
}
