/**
 * USD as the API gives it (an exact decimal string) for a person: 4 decimals, and for a sum under a
 * hundredth of a cent enough decimals to show two significant digits (`$0.000037`, never `3.70e-5`).
 */
export function formatUsd(usd: string | number): string {
  const n = Number(usd);
  if (!Number.isFinite(n)) return String(usd);
  const abs = Math.abs(n);
  const decimals = abs !== 0 && abs < 0.0001 ? Math.min(12, 1 - Math.floor(Math.log10(abs))) : 4;
  return `${n < 0 ? '-' : ''}$${abs.toFixed(decimals)}`;
}
