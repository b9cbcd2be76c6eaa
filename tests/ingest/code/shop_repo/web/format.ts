/** Formatting helpers. */
export function formatPrice(cents: number): string {
  return (cents / 100).toFixed(2) + currency();
}

export function currency(): string {
  return "EUR";
}
