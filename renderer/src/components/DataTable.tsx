import type { ReactNode } from "react";

/** A column heading: its text, or a heading with a tooltip; `false` leaves a conditional column out. */
export type Column = string | { label: string; title?: string } | false;

/**
 * The app's table: headings, rows, and a wrapper that scrolls sideways inside its card when the
 * window is narrow (the page itself never does). `actions` adds a last column of buttons,
 * named for screen readers only.
 */
export function DataTable({ columns, actions = false, children }: { columns: Column[]; actions?: boolean; children: ReactNode }) {
  return (
    <div className="table-scroll">
      <table className="table">
        <thead>
          <tr>
            {columns.map((c) =>
              c === false ? null : typeof c === "string" ? (
                <th key={c}>{c}</th>
              ) : (
                <th key={c.label} title={c.title}>
                  {c.label}
                </th>
              ),
            )}
            {actions && (
              <th>
                <span className="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
