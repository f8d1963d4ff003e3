import { Module, type DynamicModule } from '@nestjs/common';
import type { Config } from '@switchboard/config';
import { InfraModule } from '@switchboard/platform';
import { PostTurnProcessor } from './post-turn.processor';

@Module({})
export class HooksModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: HooksModule,
      imports: [InfraModule.forRoot(config, 'hooks-worker')],
      providers: [PostTurnProcessor],
    };
  }
}
