// Draws the app's icon set (build/icons/*.png, build/icon.png) and the tray icons: a rounded
// teal square with three white claw marks, rendered from distance functions so every size is
// anti-aliased. Deterministic: re-running it rewrites identical files.
// Run: node --import tsx scripts/make-icons.ts
import fs from "node:fs";
import path from "node:path";
import { PNG } from "pngjs";

const root = path.resolve(import.meta.dirname, "..");
const iconsDir = path.join(root, "build", "icons");

type Rgba = [number, number, number, number];

/** Distance from p to segment ab (all in unit coordinates). */
function segmentDistance(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax;
  const dy = by - ay;
  const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

/** Signed distance to a rounded square of half-size h and corner radius r, centred at 0.5. */
function roundedSquare(px: number, py: number, h: number, r: number): number {
  const qx = Math.abs(px - 0.5) - (h - r);
  const qy = Math.abs(py - 0.5) - (h - r);
  return Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - r;
}

/** Three claw marks: slightly slanted strokes, the middle one longest. */
function clawDistance(px: number, py: number): number {
  const strokes: [number, number, number, number][] = [
    [0.36, 0.3, 0.27, 0.7],
    [0.55, 0.24, 0.45, 0.76],
    [0.73, 0.3, 0.64, 0.7],
  ];
  return Math.min(...strokes.map(([ax, ay, bx, by]) => segmentDistance(px, py, ax, ay, bx, by))) - 0.055;
}

function coverage(signedDistance: number, size: number): number {
  return Math.max(0, Math.min(1, 0.5 - signedDistance * size));
}

function render(size: number, shade: (px: number, py: number) => Rgba): PNG {
  const png = new PNG({ width: size, height: size });
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const [r, g, b, a] = shade((x + 0.5) / size, (y + 0.5) / size);
      const i = (y * size + x) * 4;
      png.data[i] = Math.round(r);
      png.data[i + 1] = Math.round(g);
      png.data[i + 2] = Math.round(b);
      png.data[i + 3] = Math.round(a * 255);
    }
  }
  return png;
}

function appIcon(size: number): PNG {
  return render(size, (px, py) => {
    const bg = coverage(roundedSquare(px, py, 0.45, 0.1), size);
    const claw = coverage(clawDistance(px, py), size);
    // Teal gradient, lighter at the top.
    const base: Rgba = [18 + 30 * (1 - py), 110 + 40 * (1 - py), 120 + 40 * (1 - py), 1];
    const mix = (c: number, w: number) => c * (1 - claw) + w * claw;
    return [mix(base[0], 255), mix(base[1], 255), mix(base[2], 255), bg];
  });
}

/** Tray: the claw marks alone. Colour for Linux/Windows; black + alpha "template" for macOS. */
function trayIcon(size: number, rgb: [number, number, number]): PNG {
  return render(size, (px, py) => {
    const c = coverage(clawDistance(px, py) + 0.02, size);
    return [rgb[0], rgb[1], rgb[2], c];
  });
}

function write(file: string, png: PNG): void {
  const bytes = PNG.sync.write(png, { colorType: 6 });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, bytes);
  console.log(`${path.relative(root, file)}  ${bytes.length} bytes`);
}

for (const size of [16, 32, 48, 64, 128, 256, 512, 1024]) write(path.join(iconsDir, `${size}x${size}.png`), appIcon(size));
write(path.join(root, "build", "icon.png"), appIcon(1024));
write(path.join(iconsDir, "tray.png"), trayIcon(32, [20, 140, 150]));
write(path.join(iconsDir, "trayTemplate.png"), trayIcon(16, [0, 0, 0]));
write(path.join(iconsDir, "trayTemplate@2x.png"), trayIcon(32, [0, 0, 0]));
