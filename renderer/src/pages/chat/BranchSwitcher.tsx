import type { Branch } from "./tree.js";

/** "‹ 2 / 3 ›": which version of a message is shown (an edited question, a regenerated answer), and the others. */
export function BranchSwitcher({ branch, what, disabled, onSwitch }: { branch: Branch; what: string; disabled: boolean; onSwitch: (turnId: string) => void }) {
  const { index, turnIds } = branch;
  const go = (i: number) => {
    if (i >= 0 && i < turnIds.length && !disabled) onSwitch(turnIds[i]);
  };
  return (
    <span className="branch-switcher" role="group" aria-label={`Versions of this ${what}`}>
      <button
        type="button"
        className="icon"
        aria-label={`Previous ${what}`}
        title={`Previous ${what}`}
        disabled={disabled || index === 0}
        onClick={() => go(index - 1)}
      >
        ‹
      </button>
      <span className="branch-count" aria-live="polite">
        {index + 1} / {turnIds.length}
      </span>
      <button
        type="button"
        className="icon"
        aria-label={`Next ${what}`}
        title={`Next ${what}`}
        disabled={disabled || index === turnIds.length - 1}
        onClick={() => go(index + 1)}
      >
        ›
      </button>
    </span>
  );
}
