import { ApiProperty, ApiSchema } from '@nestjs/swagger';

@ApiSchema({
  name: 'ServerInfo',
  description: 'What a client needs to know about this server to tell whether others can reach it',
})
export class ServerInfoResponse {
  @ApiProperty({
    example: 'https://licenses.example.com',
    description:
      'The address payment connectors’ endpoint URLs start with: PUBLIC_URL, or http://localhost:PORT when it is not set',
  })
  public_url: string;

  @ApiProperty({ description: 'Whether PUBLIC_URL is set (false: public_url is the local fallback)' })
  public_url_set: boolean;

  @ApiProperty({ description: 'Whether public_url starts with https:// (payment providers require it)' })
  public_url_https: boolean;
}
