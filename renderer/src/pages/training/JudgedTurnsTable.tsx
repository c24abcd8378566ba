import type { Turn } from "../../api/shapes.js";
import { DataTable } from "../../components/DataTable.js";
import { fmtTime } from "../../components/format.js";
import { votesWords } from "../../components/terms.js";

/** The latest judged turns: question, answer, votes, rating and hint; a judge's hint can be kept as a preference from its row. */
export function JudgedTurnsTable({ judged, keptFrom, onKeep }: { judged: Turn[]; keptFrom: Set<string>; onKeep: (turnId: string, text: string) => void }) {
  if (judged.length === 0) return <p className="muted">No judged turns yet. Turns are judged from your next message, or rated by your thumbs and hints.</p>;
  return (
    <DataTable columns={["When", "Question", "Answer", "Judges", "Rating", "Hint"]}>
      {judged.map((t) => (
        <tr key={t.id}>
          <td className="nowrap">{fmtTime(t.at)}</td>
          <td className="clip" title={t.userText}>
            {t.userText || "—"}
          </td>
          <td className="clip" title={t.response}>
            {t.response || "—"}
          </td>
          <td>
            <Votes turn={t} />
          </td>
          <td title="reward">{t.reward === null ? "—" : t.reward > 0 ? `+${t.reward}` : t.reward < 0 ? `−${-t.reward}` : "0"}</td>
          <td className="wrap-cell">
            {t.hint ?? t.judgeHints[0] ?? "—"}
            {t.hint === null && t.judgeHints.length > 0 && (
              <div className="small">
                {keptFrom.has(t.id) ? (
                  <span className="muted">
                    Kept as a <a href="#/preferences">preference</a>
                  </span>
                ) : (
                  <button type="button" className="link small" aria-label={`Keep “${t.judgeHints[0]}” as a preference`} onClick={() => onKeep(t.id, t.judgeHints[0])}>
                    Keep as preference
                  </button>
                )}
              </div>
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** The judges' votes in words ("2 bad, 1 no verdict") with the exact votes in a tooltip, and the user's thumbs, which override them. */
function Votes({ turn }: { turn: Turn }) {
  const scores = turn.votes.map((v) => v.score);
  const words = votesWords(scores);
  const exact = scores.map((v) => (v === null ? "no verdict" : v > 0 ? "+1" : v < 0 ? "−1" : "0")).join(" ");
  const thumbs = turn.thumbs ? `you: thumbs ${turn.thumbs}` : "";
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
