import { render } from 'preact';
import { Portal } from './portal';
import '../app.css';
import './portal.css';

render(<Portal />, document.getElementById('app') as HTMLElement);
