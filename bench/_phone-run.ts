import { benchPhoneUploads } from "./phone-uploads";
benchPhoneUploads().then((t) => console.log(t), (e) => { console.error(e); process.exit(1); });
