/** The machine's plain facts for doctor: read in-process (nothing here can crash). */
import fs from "node:fs";
import os from "node:os";
import { hostAvailableBytes } from "../../../models/plan/available.js";

export interface MachineBasics {
  cpuModel: string;
  cores: number;
  ramTotalBytes: number;
  ramFreeBytes: number;
  os: string;
  node: string;
  loadAverage: number;
}

function osName(): string {
  try {
    const m = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(fs.readFileSync("/etc/os-release", "utf8"));
    if (m) return `${m[1]} (${os.type()} ${os.release()}, ${os.arch()})`;
  } catch {
    // not Linux, or no os-release: the kernel's name will do
  }
  return `${os.type()} ${os.release()} (${os.arch()})`;
}

export function machineBasics(): MachineBasics {
  return {
    cpuModel: os.cpus()[0]?.model?.trim() || "unknown",
    cores: os.availableParallelism(),
    ramTotalBytes: os.totalmem(),
    // MemAvailable (what the trainer plans with), not MemFree: the page cache gives memory back.
    ramFreeBytes: hostAvailableBytes(),
    os: osName(),
    node: process.version,
    loadAverage: os.loadavg()[0],
  };
}

/** The NVIDIA kernel driver's version line (Linux), or null without one. */
export function nvidiaDriver(): string | null {
  try {
    const line = fs.readFileSync("/proc/driver/nvidia/version", "utf8").split("\n")[0];
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.82.07  …" or, for the open module,
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build …".
    return /Kernel Module(?: for \S+)?\s+(\d[\d.]*)/.exec(line)?.[1] ?? line.trim();
  } catch {
    return null;
  }
}
