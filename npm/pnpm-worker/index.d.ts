export * from '@cas/native/worker'
