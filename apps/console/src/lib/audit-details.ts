/**
 * An audit entry's details as lines a person reads (`changes.dailySpendLimitUsd: 42.5`) rather than
 * JSON: nested objects flattened to dotted keys, arrays and scalars shown as their JSON text.
 */
export function detailLines(details: Record<string, unknown>, prefix = ''): [string, string][] {
  return Object.entries(details).flatMap(([key, value]): [string, string][] => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const nested = detailLines(value as Record<string, unknown>, path);
      return nested.length > 0 ? nested : [[path, '{}']];
    }
    return [[path, typeof value === 'string' ? value : JSON.stringify(value)]];
  });
}
