// HTTP client for the shop (FR-3).
import { formatPrice } from "./format";
import * as fmt from "./format";

export interface Client {
  get(path: string): Promise<string>;
}

export class Api {
  constructor(private client: Client) {}

  async order(id: string): Promise<string> {
    const body = await this.client.get(`/orders/${id}`);
    return this.render(body);
  }

  render(body: string): string {
    return formatPrice(body.length) + fmt.currency();
  }
}

export function makeApi(client: Client): Api {
  const api = new Api(client);
  api.render("x");
  return api;
}
