import type { TurnView } from "../../../../electron/core/api/sessions.js";
import { DataTable } from "../../components/DataTable.js";
import { fmtTime } from "../../components/format.js";
import { votesWords } from "../../components/terms.js";
import { epochOf, finite } from "../../format/time.js";
import { hintOf, judgeHintsOf, thumbsOf, userTextOf } from "../../format/turns.js";

/** The latest judged turns: question, answer, votes, rating and hint; a judge's hint can be kept as a preference from its row. */
export function JudgedTurnsTable({ judged, keptFrom, onKeep }: { judged: TurnView[]; keptFrom: Set<string>; onKeep: (turnId: string, text: string) => void }) {
  if (judged.length === 0) return <p className="muted">No judged turns yet. Turns are judged from your next message, or rated by your thumbs and hints.</p>;
  return (
    <DataTable columns={["When", "Question", "Answer", "Judges", "Rating", "Hint"]}>
      {judged.map((t) => (
        <JudgedTurnRow key={t.turnId} turn={t} kept={keptFrom.has(t.turnId)} onKeep={onKeep} />
      ))}
    </DataTable>
  );
}

/** One judged turn's row. */
function JudgedTurnRow({ turn: t, kept, onKeep }: { turn: TurnView; kept: boolean; onKeep: (turnId: string, text: string) => void }) {
  const userText = userTextOf(t);
  const reward = finite(t.reward);
  const hint = hintOf(t);
  const judgeHints = judgeHintsOf(t);
  return (
    <tr>
      <td className="nowrap">{fmtTime(epochOf(t.time))}</td>
      <td className="clip" title={userText}>
        {userText || "—"}
      </td>
      <td className="clip" title={t.text}>
        {t.text || "—"}
      </td>
      <td>
        <Votes turn={t} />
      </td>
      <td title="reward">{reward === null ? "—" : reward > 0 ? `+${reward}` : reward < 0 ? `−${-reward}` : "0"}</td>
      <td className="wrap-cell">
        {hint ?? judgeHints[0] ?? "—"}
        {hint === null && judgeHints.length > 0 && (
          <div className="small">
            {kept ? (
              <span className="muted">
                Kept as a <a href="#/preferences">preference</a>
              </span>
            ) : (
              <button
                type="button"
                className="link small"
                aria-label={`Keep “${judgeHints[0]}” as a preference`}
                onClick={() => onKeep(t.turnId, judgeHints[0])}
              >
                Keep as preference
              </button>
            )}
          </div>
        )}
      </td>
    </tr>
  );
}

/** The judges' votes in words ("2 bad, 1 no verdict") with the exact votes in a tooltip, and the user's thumbs, which override them. */
function Votes({ turn }: { turn: TurnView }) {
  const scores = (turn.judge?.votes ?? []).map((v) => finite(v.score));
  const words = votesWords(scores);
  const exact = scores.map((v) => (v === null ? "no verdict" : v > 0 ? "+1" : v < 0 ? "−1" : "0")).join(" ");
  const thumbs = thumbsOf(turn) ? `you: thumbs ${thumbsOf(turn)}` : "";
  if (!words.text && !thumbs) return <>—</>;
  return (
    <>
      {words.text && (
        <span aria-label={words.label} title={`Judge votes: ${exact}`}>
          {words.text}
        </span>
      )}
      {words.text && thumbs ? " · " : ""}
      {thumbs}
    </>
  );
}
